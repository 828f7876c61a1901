// Launches Debian's Chromium for a browser test, the way Run in
// browsertest.go prepares it: headless, a fresh user data folder, nothing
// that reaches the network on its own, and no sandbox when run as root.
import { pathToFileURL } from 'node:url';

// playwright-core is the web console's pinned copy (browsertest.go finds it).
const { chromium } = await import(pathToFileURL(process.env.CORRAL_PLAYWRIGHT).href);

export const config = JSON.parse(process.env.CORRAL_BROWSER_TEST || '{}');

export async function launch() {
  const args = [
    '--headless',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
  ];
  return chromium.launchPersistentContext(process.env.CORRAL_USER_DATA_DIR, {
    executablePath: process.env.CORRAL_CHROMIUM,
    headless: true,
    chromiumSandbox: process.env.CORRAL_NO_SANDBOX !== 'true',
    args,
  });
}
