/**
 * The line a TypeScript function is defined on, for profiles of code run by tsx: tsx compiles
 * each module into one or two long lines, so V8 reports its functions at line 1 or 2 and a
 * column of the compiled text. The name is looked up in the source file instead, parsed with
 * TypeScript's own parser; a name defined more than once there (two classes' `send`) or not at
 * all gives no line rather than a wrong one.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type ts from 'typescript';

/**
 * TypeScript's parser, loaded on the first file parsed: the benches import this module, and the
 * API bench measures its own process, which should not carry the compiler unless a profile is read.
 */
let typescript: typeof ts | null = null;
function parser(): typeof ts {
  typescript ??= createRequire(import.meta.url)('typescript') as typeof ts;
  return typescript;
}

/** Whether `url` is a TypeScript source (whose functions V8 places on tsx's compiled lines). */
export function isTypeScriptUrl(url: string): boolean {
  return /\.(?:[cm]?ts|tsx)$/.test(url);
}

/** The name V8 gives a function defined by `node`, or null when it defines none (or none by a plain name). */
function definedName(api: typeof ts, node: ts.Node): string | null {
  const nameOf = (n: ts.Node | undefined) => (n && (api.isIdentifier(n) || api.isPrivateIdentifier(n) || api.isStringLiteral(n)) ? n.text : null);
  const isFunction = (n: ts.Node | undefined) => !!n && (api.isArrowFunction(n) || api.isFunctionExpression(n));
  if (api.isFunctionDeclaration(node) || api.isMethodDeclaration(node)) return nameOf(node.name);
  if (api.isGetAccessorDeclaration(node)) return `get ${nameOf(node.name) ?? ''}`;
  if (api.isSetAccessorDeclaration(node)) return `set ${nameOf(node.name) ?? ''}`;
  if ((api.isVariableDeclaration(node) || api.isPropertyDeclaration(node) || api.isPropertyAssignment(node)) && isFunction(node.initializer)) return nameOf(node.name);
  return null;
}

/** Every function name `source` defines, with the lines (1-based) defining it. */
export function definitionLinesOf(source: string, fileName = 'source.ts'): Map<string, number[]> {
  const api = parser();
  const file = api.createSourceFile(fileName, source, api.ScriptTarget.Latest, true, fileName.endsWith('.tsx') ? api.ScriptKind.TSX : api.ScriptKind.TS);
  const found = new Map<string, number[]>();
  const visit = (node: ts.Node) => {
    const name = definedName(api, node);
    if (name) {
      const line = file.getLineAndCharacterOfPosition(node.getStart(file)).line + 1;
      found.set(name, [...(found.get(name) ?? []), line]);
    }
    api.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

/**
 * Finds lines of TypeScript functions by name, parsing each file once. `line(url, name)` is the
 * only line of `url`'s source that defines `name`, or 0.
 */
export class SourceLines {
  private readonly files = new Map<string, Map<string, number[]> | null>();

  line(url: string, name: string): number {
    if (!isTypeScriptUrl(url)) return 0;
    let names = this.files.get(url);
    if (names === undefined) {
      const path = url.startsWith('file:') ? fileURLToPath(url) : url;
      try {
        names = definitionLinesOf(readFileSync(path, 'utf8'), path);
      } catch {
        names = null;
      }
      this.files.set(url, names);
    }
    const lines = names?.get(name);
    return lines?.length === 1 ? lines[0]! : 0;
  }
}
