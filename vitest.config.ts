import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    projects: ['shared', 'control-plane', 'media-gateway', 'voice-pipeline', 'loadtest'].map((name) => ({
      extends: true,
      test: { name, root: `./${name}`, include: ['test/**/*.test.ts'] },
    })),
    globalSetup: ['./control-plane/test/global-setup.ts'],
    testTimeout: 20_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
