// The console's build: deploy/web.sh runs it and copies dist/ into the Go
// package that embeds it (internal/console/dist).
import { defineConfig, defaultClientConditions } from 'vite';

export default defineConfig({
  base: '/',
  oxc: {
    jsx: { runtime: 'automatic', importSource: 'preact' },
  },
  resolve: {
    // The TypeScript client (clients/typescript, a local package) is
    // bundled from its sources: its "source" export condition.
    conditions: ['source', ...defaultClientConditions],
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
