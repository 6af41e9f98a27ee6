import { defineConfig } from 'vitest/config';

const common = { include: ['test/**/*.test.ts'], testTimeout: 20_000, hookTimeout: 60_000 };

export default defineConfig({
  test: {
    pool: 'forks',
    projects: [
      { test: { ...common, name: 'shared', root: './shared' } },
      { test: { ...common, name: 'control-plane', root: './control-plane', globalSetup: ['./test/global-setup.ts'] } },
      { test: { ...common, name: 'media-gateway', root: './media-gateway' } },
      { test: { ...common, name: 'loadtest', root: './loadtest' } },
      { test: { ...common, name: 'voice-pipeline', root: './voice-pipeline' } },
      // Whole-platform calls: control plane + gateway + simulators, over both buses.
      { test: { ...common, name: 'e2e', root: './', include: ['test/e2e/**/*.test.ts'], globalSetup: ['./control-plane/test/global-setup.ts'], testTimeout: 120_000 } },
    ],
  },
});
