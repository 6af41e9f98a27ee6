/**
 * The line a TypeScript function is defined on, for profiles of code run by tsx: tsx compiles
 * each module into one or two long lines, so V8 reports its functions at line 1 or 2 and a
 * column of the compiled text. The name is looked up in the source file instead, parsed with
 * TypeScript's own parser; a name defined more than once there (two classes' `send`) or not at
 * all gives no line rather than a wrong one.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/** The name V8 gives a function defined by `node`, or null when it defines none (or none by a plain name). */
function definedName(node: ts.Node): string | null {
  const nameOf = (n: ts.Node | undefined) => (n && (ts.isIdentifier(n) || ts.isPrivateIdentifier(n) || ts.isStringLiteral(n)) ? n.text : null);
  const isFunction = (n: ts.Node | undefined) => !!n && (ts.isArrowFunction(n) || ts.isFunctionExpression(n));
  if (ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node)) return nameOf(node.name);
  if (ts.isGetAccessorDeclaration(node)) return `get ${nameOf(node.name) ?? ''}`;
  if (ts.isSetAccessorDeclaration(node)) return `set ${nameOf(node.name) ?? ''}`;
  if ((ts.isVariableDeclaration(node) || ts.isPropertyDeclaration(node) || ts.isPropertyAssignment(node)) && isFunction(node.initializer)) return nameOf(node.name);
  return null;
}

/** Every function name `source` defines, with the lines (1-based) defining it. */
export function definitionLinesOf(source: string, fileName = 'source.ts'): Map<string, number[]> {
  const file = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, true, fileName.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS);
  const found = new Map<string, number[]>();
  const visit = (node: ts.Node) => {
    const name = definedName(node);
    if (name) {
      const line = file.getLineAndCharacterOfPosition(node.getStart(file)).line + 1;
      found.set(name, [...(found.get(name) ?? []), line]);
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

/** Lines (1-based) of `source` that define `name`. */
export function definitionLines(source: string, name: string): number[] {
  return definitionLinesOf(source).get(name) ?? [];
}

/**
 * Finds lines of TypeScript functions by name, parsing each file once. `line(url, name)` is the
 * only line of `url`'s source that defines `name`, or 0.
 */
export class SourceLines {
  private readonly files = new Map<string, Map<string, number[]> | null>();

  line(url: string, name: string): number {
    if (!/\.(?:[cm]?ts|tsx)$/.test(url)) return 0;
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
