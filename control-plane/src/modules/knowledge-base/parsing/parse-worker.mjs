// Entry of a knowledge-base parse worker. A worker thread does not run through vitest's
// transform, and only inherits tsx's loader when the process was started by tsx, so the
// TypeScript body is loaded with tsx's scoped import (as the gateway's encoder worker does).
import { tsImport } from 'tsx/esm/api';

await tsImport('./parse-worker-body.ts', import.meta.url);
