/**
 * A strict-enough well-formedness check for the generated reports (no XML parser is
 * installed in loadtest): every element closed in order, void elements only as HTML allows,
 * attribute values quoted, and no raw `<`, `>` or bare `&` left in text.
 */
const VOID = new Set(['meta', 'br', 'hr', 'img', 'input', 'link']);

/** The problems found in `markup`; empty when it is well formed. */
export function markupProblems(markup: string): string[] {
  const problems: string[] = [];
  const stack: string[] = [];
  // The stylesheet holds CSS (child combinators `>`), not markup.
  // Likewise an inline script (comparisons), which cannot hold `</script`.
  const src = markup
    .replace(/<style>[^<]*<\/style>/g, '<style></style>')
    .replace(/<script>[\s\S]*?<\/script>/g, '<script></script>')
    .replace(/^<!doctype html>/i, '');
  const tag = /<(\/?)([a-zA-Z][\w:-]*)((?:\s+[\w:-]+="[^"<>]*")*)\s*(\/?)>/g;
  let last = 0;
  for (let m = tag.exec(src); m; m = tag.exec(src)) {
    checkText(src.slice(last, m.index), problems);
    last = tag.lastIndex;
    const [, closing, rawName, , selfClosing] = m;
    const name = rawName!.toLowerCase();
    if (closing) {
      const open = stack.pop();
      if (open !== name) problems.push(`</${name}> closes <${open ?? 'nothing'}> at ${m.index}`);
    } else if (!selfClosing && !VOID.has(name)) {
      stack.push(name);
    }
  }
  checkText(src.slice(last), problems);
  if (stack.length > 0) problems.push(`unclosed: ${stack.join(' > ')}`);
  return problems;
}

function checkText(text: string, problems: string[]): void {
  if (/[<>]/.test(text)) problems.push(`raw < or > (or a malformed tag) in text: ${JSON.stringify(text.slice(0, 80))}`);
  if (/&(?!(amp|lt|gt|quot|#39);)/.test(text)) problems.push(`bare & in text: ${JSON.stringify(text.slice(0, 80))}`);
}

/** How often `needle` occurs in `haystack`. */
export function occurrences(haystack: string, needle: string): number {
  return haystack.split(needle).length - 1;
}
