/**
 * Writes the role × right matrix of control-plane/src/modules/auth/permissions.ts into
 * docs/api.md (between the role-matrix markers). Run after changing the matrix:
 * `pnpm exec tsx bin/render-role-matrix.ts`; a unit test fails while the two differ.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { spliceRoleMatrix } from '../control-plane/src/modules/auth/permissions.js';

const file = new URL('../docs/api.md', import.meta.url);
const before = readFileSync(file, 'utf8');
const after = spliceRoleMatrix(before);
if (after !== before) writeFileSync(file, after);
console.log(after === before ? 'docs/api.md: role matrix already current' : 'docs/api.md: role matrix updated');
