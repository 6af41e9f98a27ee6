// Entry of the recording encoder worker. A worker thread does not run through vitest's
// transform, and only inherits tsx's loader when the process was started by tsx, so the
// TypeScript body is loaded with tsx's scoped import: the same in tests, `pnpm start` and
// `node --import tsx`.
import { tsImport } from 'tsx/esm/api';

await tsImport('./encoder-worker-body.ts', import.meta.url);
