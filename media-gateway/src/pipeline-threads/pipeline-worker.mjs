// Entry of a pipeline thread. A worker thread does not run through vitest's transform, and
// only inherits tsx's loader when the process was started by tsx, so the TypeScript body is
// loaded with tsx's scoped import (as the recording encoder's): the same in tests,
// `pnpm start` and `node --import tsx`.
import { tsImport } from 'tsx/esm/api';

await tsImport('./pipeline-worker-body.ts', import.meta.url);
