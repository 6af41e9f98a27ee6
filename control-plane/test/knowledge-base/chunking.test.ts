import { Tiktoken } from 'js-tiktoken/lite';
import cl100kBase from 'js-tiktoken/ranks/cl100k_base';
import { describe, expect, it } from 'vitest';
import { chunkSections, splitSentences } from '../../src/modules/knowledge-base/chunking/chunker.js';
import type { KbChunk, ParsedSection } from '../../src/modules/knowledge-base/types.js';

// An encoder of our own, so token counts are checked independently of the chunker's module.
const enc = new Tiktoken(cl100kBase);
const tokens = (text: string): number => enc.encode(text, [], []).length;

const WORDS = ['harbour', 'bistro', 'menu', 'seasonal', 'fish', 'terrace', 'booking', 'evening', 'guests', 'kitchen', 'wine', 'parking', 'garden', 'weekend', 'dessert', 'allergens', 'staff', 'private', 'room', 'delivery'];

/** A deterministic, unique sentence: "Fact 17 says the harbour bistro ... kitchen." */
function sentence(n: number, length = 12): string {
  const words = Array.from({ length }, (_, i) => WORDS[(n * 7 + i * 3 + ((n * i) % 5)) % WORDS.length]);
  return `Fact ${n} says the ${words.join(' ')}.`;
}

function paragraph(first: number, count: number): string {
  return Array.from({ length: count }, (_, i) => sentence(first + i)).join(' ');
}

const section = (text: string, pageNumber: number | null = null, context: string | null = null): ParsedSection => ({ text, pageNumber, context });

/** The chunk's text minus a prefix repeated from the previous chunk (longest prefix that is a suffix of it). */
function overlapWith(prev: KbChunk, next: KbChunk): string {
  for (let len = Math.min(prev.text.length, next.text.length); len > 0; len--) {
    const head = next.text.slice(0, len);
    if (prev.text.endsWith(head) && (len === next.text.length || /\s/.test(next.text[len] ?? ''))) return head;
  }
  return '';
}

describe('chunkSections', () => {
  it('gives no chunks for empty input or whitespace-only sections', () => {
    expect(chunkSections([])).toEqual([]);
    expect(chunkSections([section(''), section('  \n\n \t ')])).toEqual([]);
  });

  it('keeps every chunk within the token bounds, counted with the real tokenizer', () => {
    const paragraphs = Array.from({ length: 60 }, (_, p) => paragraph(p * 10, 3 + (p % 8)));
    const chunks = chunkSections([section(paragraphs.join('\n\n'))]);
    expect(chunks.length).toBeGreaterThan(5);
    chunks.forEach((c, i) => {
      expect(c.position).toBe(i);
      expect(c.tokenCount).toBe(tokens(c.text));
      expect(c.tokenCount).toBeLessThanOrEqual(600);
      // Every chunk but the last is filled close to the target (the next paragraph did not fit).
      if (i < chunks.length - 1) expect(c.tokenCount).toBeGreaterThan(300);
    });
  });

  it('cuts between paragraphs when paragraphs fit, and carries whole sentences as overlap', () => {
    const paragraphs = Array.from({ length: 40 }, (_, p) => paragraph(p * 10, 6));
    const chunks = chunkSections([section(paragraphs.join('\n\n'))]);
    const known = new Set(paragraphs);
    const sentences = new Set(paragraphs.flatMap((p) => splitSentences(p).map((s) => s.text)));
    for (let i = 0; i < chunks.length; i++) {
      const chunk = chunks[i] as KbChunk;
      const overlap = i === 0 ? '' : overlapWith(chunks[i - 1] as KbChunk, chunk);
      if (i > 0) {
        expect(overlap.length).toBeGreaterThan(0);
        expect(tokens(overlap)).toBeLessThanOrEqual(64);
        // The overlap is whole sentences of the previous chunk.
        for (const s of splitSentences(overlap)) expect(sentences.has(s.text)).toBe(true);
      }
      // After the overlap, the chunk is whole paragraphs.
      const body = chunk.text.slice(overlap.length).replace(/^\s+/, '');
      for (const p of body.split('\n\n')) expect(known.has(p)).toBe(true);
    }
    // Nothing lost: every paragraph is in some chunk.
    for (const p of paragraphs) expect(chunks.some((c) => c.text.includes(p))).toBe(true);
  });

  it('cuts a paragraph longer than the target between sentences, never inside one', () => {
    const long = paragraph(0, 150); // one paragraph of ~3,000 tokens
    expect(tokens(long)).toBeGreaterThan(2000);
    const chunks = chunkSections([section(long)]);
    const sentences = new Set(splitSentences(long).map((s) => s.text));
    expect(chunks.length).toBeGreaterThan(4);
    for (const c of chunks) {
      expect(c.tokenCount).toBeLessThanOrEqual(600);
      for (const s of splitSentences(c.text)) expect(sentences.has(s.text)).toBe(true);
    }
    for (const s of sentences) expect(chunks.some((c) => c.text.includes(s))).toBe(true);
  });

  it('cuts a sentence longer than the target by tokens, at word boundaries, losing no words', () => {
    const words = Array.from({ length: 3000 }, (_, i) => `${WORDS[i % WORDS.length]}${i}`);
    const chunks = chunkSections([section(words.join(' '))]);
    expect(chunks.length).toBeGreaterThan(3);
    for (const c of chunks) expect(c.tokenCount).toBeLessThanOrEqual(600);
    // Every word appears whole (with its number) in some chunk, and chunks hold only whole words.
    const seen = new Set(chunks.flatMap((c) => c.text.split(/\s+/)));
    for (const w of words) expect(seen.has(w)).toBe(true);
    for (const w of seen) expect(words.includes(w)).toBe(true);
  });

  it('never produces broken characters when cutting text without spaces', () => {
    const cjk = '知識ベースの文書は検索のために分割されます'.repeat(100);
    const chunks = chunkSections([section(cjk)]);
    expect(chunks.length).toBeGreaterThan(1);
    for (const c of chunks) {
      expect(c.text).not.toContain('\uFFFD');
      expect(c.tokenCount).toBeLessThanOrEqual(600);
    }
  });

  it('never crosses a page boundary, and does not carry overlap across one', () => {
    const pages = [1, 2, 3].map((page) => section(paragraph(page * 1000, 60), page, null));
    const chunks = chunkSections(pages);
    expect(new Set(chunks.map((c) => c.pageNumber))).toEqual(new Set([1, 2, 3]));
    for (const c of chunks) {
      const facts = [...c.text.matchAll(/Fact (\d+) /g)].map((m) => Math.floor(Number(m[1]) / 1000));
      expect(new Set(facts)).toEqual(new Set([c.pageNumber]));
    }
    // Pages come in order and each page's first chunk starts with that page's first sentence.
    expect(chunks.map((c) => c.pageNumber)).toEqual([...chunks.map((c) => c.pageNumber)].sort());
    for (const page of [1, 2, 3]) expect(chunks.find((c) => c.pageNumber === page)?.text.startsWith(`Fact ${page * 1000} `)).toBe(true);
  });

  it('keeps the section context on every chunk made from it, and merges small sections of a page', () => {
    const chunks = chunkSections([
      section(paragraph(0, 80), null, 'Opening hours > Weekends'),
      section('Parking is behind the building.', null, 'Parking'),
      section('Dogs are welcome on the terrace.', null, 'Pets'),
    ]);
    const first = chunks.filter((c) => c.text.includes('Fact 0 ') || c.text.includes('Fact 40 '));
    expect(first.length).toBeGreaterThan(0);
    for (const c of chunks.slice(0, -1)) expect(c.context).toBe('Opening hours > Weekends');
    const last = chunks.at(-1) as KbChunk;
    expect(last.text).toContain('Parking is behind the building.\n\nDogs are welcome on the terrace.');
    expect(last.context).toMatch(/Parking \| Pets$/);
  });

  it('reads Windows line endings as paragraph breaks and special-token text as plain text', () => {
    const text = Array.from({ length: 30 }, (_, p) => paragraph(p * 10, 6)).join('\r\n\r\n') + '\r\n\r\nThe literal <|endoftext|> is text here.';
    const chunks = chunkSections([section(text)]);
    expect(chunks.length).toBeGreaterThan(3);
    for (const c of chunks) {
      expect(c.text).not.toContain('\r');
      expect(c.tokenCount).toBe(tokens(c.text));
    }
    expect(chunks.at(-1)?.text).toContain('The literal <|endoftext|> is text here.');
    // CRLF blank lines were paragraph breaks: the first chunk is whole paragraphs joined by \n\n.
    expect(chunks[0]?.text.split('\n\n').every((p) => /^Fact \d+ says/.test(p))).toBe(true);
  });

  it('honours smaller options', () => {
    const chunks = chunkSections([section(paragraph(0, 60))], { targetTokens: 100, overlapTokens: 20, maxTokens: 120 });
    expect(chunks.length).toBeGreaterThan(8);
    for (const c of chunks) expect(c.tokenCount).toBeLessThanOrEqual(120);
    expect(() => chunkSections([], { targetTokens: 100, overlapTokens: 100 })).toThrow(/overlapTokens/);
    expect(() => chunkSections([], { targetTokens: 100, maxTokens: 50 })).toThrow(/maxTokens/);
  });

  it('chunks a 1 MB text in a few seconds', () => {
    const paragraphs: string[] = [];
    let size = 0;
    for (let p = 0; size < 1_000_000; p++) {
      const text = paragraph(p * 20, 2 + (p % 15));
      paragraphs.push(text);
      size += text.length + 2;
    }
    const started = performance.now();
    const chunks = chunkSections([section(paragraphs.join('\n\n'))]);
    const elapsedMs = performance.now() - started;
    expect(chunks.length).toBeGreaterThan(300);
    for (const c of chunks) expect(c.tokenCount).toBeLessThanOrEqual(600);
    // About 1.5 s alone on this machine; generous for a busy shared runner.
    expect(elapsedMs).toBeLessThan(20_000);
  });
});
