// The console's build: deploy/web.sh runs it and copies dist/ into the Go
// package that embeds it (internal/console/dist).
import { defineConfig } from 'vite';

export default defineConfig({
  base: '/',
  oxc: {
    jsx: { runtime: 'automatic', importSource: 'preact' },
  },
  build: {
    outDir: 'dist',
    assetsDir: 'assets',
    emptyOutDir: true,
    sourcemap: false,
    target: 'es2022',
    reportCompressedSize: false,
    chunkSizeWarningLimit: 1000,
  },
});
