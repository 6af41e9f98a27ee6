import { describe, expect, it } from 'vitest';
import { SentenceAggregator, splitSentences } from '../../src/processors/sentence-aggregator.js';
import { frames, Harness } from './harness.js';

const sentences = (h: Harness) => h.downOf('tts.sentence').map((f) => [f.turnId, f.text]);

describe('SentenceAggregator', () => {
  it('emits the first piece as soon as it can be spoken, before the reply ends', () => {
    const h = new Harness(new SentenceAggregator());
    h.down(frames.turnStart('t1'));
    for (const piece of ['Sure', ',']) h.down(frames.llmText('t1', piece));
    // A comma alone may still be "3,500": the clause is complete once whitespace follows.
    expect(sentences(h)).toEqual([]);
    h.down(frames.llmText('t1', ' I', 120));
    expect(sentences(h)).toEqual([['t1', 'Sure,']]);
    expect(h.downOf('tts.sentence')[0]!.at).toBe(120);
    // After the first piece, whole sentences.
    for (const piece of [' can', ' help', ' with', ' that', '.']) h.down(frames.llmText('t1', piece));
    expect(sentences(h)).toEqual([['t1', 'Sure,']]);
    h.down(frames.llmText('t1', ' What', 180));
    expect(sentences(h)).toEqual([
      ['t1', 'Sure,'],
      ['t1', 'I can help with that.'],
    ]);
    expect(h.kinds('down')).toEqual(['agent.turn-start', 'tts.sentence', 'tts.sentence']);
  });

  it('measures per turn the time from the first LLM text to the first piece sent (firstPhraseMs)', () => {
    const agg = new SentenceAggregator();
    const h = new Harness(agg);
    h.down(frames.llmText('t1', 'We', 100), frames.llmText('t1', ' are', 105), frames.llmText('t1', ' open', 110), frames.llmText('t1', ' every', 115), frames.llmText('t1', ' day', 120));
    expect(agg.firstPhraseMs.has('t1')).toBe(false);
    h.down(frames.llmText('t1', ' from', 125), frames.llmText('t1', ' eleven. ', 130));
    expect(agg.firstPhraseMs.get('t1')).toBe(30);
    // A reply shorter than a first piece is sent at llm.done.
    h.down(frames.llmText('t2', 'Hi', 200), frames.llmDone('t2', 212));
    expect(agg.firstPhraseMs.get('t2')).toBe(12);
    // Scripted lines nobody reads do not pile up; an interrupt forgets them all.
    for (let i = 0; i < 40; i++) h.down(frames.llmText(`s${i}`, 'Hello there.', 0), frames.llmDone(`s${i}`, 1));
    expect(agg.firstPhraseMs.size).toBeLessThanOrEqual(16);
    h.down({ kind: 'interrupt', cause: 'barge-in', at: 300, speechOnsetAt: 290 });
    expect(agg.firstPhraseMs.size).toBe(0);
  });

  it('does not end a sentence at an abbreviation or an initial', () => {
    expect(splitSentences('Dr. Smith and Mrs. Jones are in. Next ', { first: true }).sentences).toEqual(['Dr. Smith and Mrs. Jones are in.']);
    expect(splitSentences('Dr. Smith and Mrs. Jones are in room ', { first: true }).sentences).toEqual(['Dr. Smith and Mrs. Jones are in room']);
    expect(splitSentences('Please see Dr. Smith, Prof. J. Watson and St. Mary in room No. 5 today. Then ').sentences).toEqual(['Please see Dr. Smith, Prof. J. Watson and St. Mary in room No. 5 today.']);
    expect(splitSentences('Of course. What time? ', { first: true })).toEqual({ sentences: ['Of course.'], rest: 'What time? ' });
  });

  it('holds short fragments such as "Dr." until the sentence is long enough', () => {
    const h = new Harness(new SentenceAggregator());
    h.down(frames.llmText('t1', 'Hi! '));
    expect(sentences(h)).toEqual([]);
    h.down(frames.llmText('t1', 'Dr. '), frames.llmText('t1', 'Smith can see you at 3.30 today. '));
    expect(sentences(h)).toEqual([['t1', 'Hi! Dr. Smith can see you at 3.30 today.']]);
  });

  it('cuts a long clause at a comma after the first piece', () => {
    const h = new Harness(new SentenceAggregator());
    const clause = 'We have availability on Monday morning, Tuesday afternoon and Wednesday after lunch,';
    expect(clause.length).toBeGreaterThanOrEqual(80);
    h.down(frames.llmText('t1', 'Let me check the calendar. '), frames.llmText('t1', `${clause} `), frames.llmText('t1', 'or Friday'));
    expect(sentences(h)).toEqual([
      ['t1', 'Let me check the calendar.'],
      ['t1', clause],
    ]);
    // A short clause is not cut.
    expect(splitSentences('Yes, of course, ').sentences).toEqual([]);
  });

  it('cuts the first piece of a reply after eight words when no boundary came, later pieces only at sentences or long clauses', () => {
    const h = new Harness(new SentenceAggregator());
    const words = 'We are open every day from eleven in the morning until ten at night, except on Mondays when we open at five, and on holidays we keep Sunday hours. Lunch is served, too. '.split(/(?= )/);
    let cutAt = -1;
    words.forEach((w, i) => {
      h.down(frames.llmText('t1', w));
      if (cutAt < 0 && sentences(h).length > 0) cutAt = i;
    });
    // The eighth word is complete when the ninth begins; not at the comma 14 words in.
    expect(words[cutAt]).toBe(' the');
    expect(sentences(h)).toEqual([
      ['t1', 'We are open every day from eleven in'],
      // Later pieces: whole sentences, or clauses past 80 characters.
      ['t1', 'the morning until ten at night, except on Mondays when we open at five, and on holidays we keep Sunday hours.'],
      ['t1', 'Lunch is served, too.'],
    ]);
    // A short sentence ends on its own before eight words.
    expect(splitSentences('We are open from nine to five. See ', { first: true }).sentences).toEqual(['We are open from nine to five.']);
    // Each turn has its own first piece; a short opening clause or sentence is one.
    h.reset().down(frames.llmText('t2', 'Yes, of course, '), frames.llmText('t3', 'Hi! Certainly, the terrace is open, '));
    expect(sentences(h)).toEqual([
      ['t2', 'Yes,'],
      ['t3', 'Hi! Certainly,'],
    ]);
    expect(splitSentences('Certainly, the terrace is open, ').sentences).toEqual([]);
    expect(splitSentences('Certainly, the terrace is open, ', { first: true }).sentences).toEqual(['Certainly,']);
    // Fewer than eight words and no boundary: wait.
    expect(splitSentences('We are open every day from eleven ', { first: true })).toEqual({ sentences: [], rest: 'We are open every day from eleven ' });
  });

  it('flushes the rest on llm.done, before passing llm.done on', () => {
    const h = new Harness(new SentenceAggregator());
    h.down(frames.llmText('t1', 'Your table is booked for seven. See you'), frames.llmText('t1', ' then'), frames.llmDone('t1', 300));
    expect(sentences(h)).toEqual([
      ['t1', 'Your table is booked for seven.'],
      ['t1', 'See you then'],
    ]);
    expect(h.kinds('down')).toEqual(['tts.sentence', 'tts.sentence', 'llm.done']);
    // Nothing buffered: llm.done alone passes through without an empty sentence.
    h.reset().down(frames.llmDone('t2'));
    expect(h.kinds('down')).toEqual(['llm.done']);
  });

  it('keeps the text of concurrent turns apart', () => {
    const h = new Harness(new SentenceAggregator());
    h.down(frames.llmText('a', 'First turn text'), frames.llmText('b', 'Second turn text'), frames.llmDone('a'), frames.llmDone('b'));
    expect(sentences(h)).toEqual([
      ['a', 'First turn text'],
      ['b', 'Second turn text'],
    ]);
  });

  it('drops buffered text on interrupt and passes the interrupt on', () => {
    const h = new Harness(new SentenceAggregator());
    h.down(frames.llmText('t1', 'Our opening hours are nine'), frames.interrupt(500));
    expect(h.kinds('down')).toEqual(['interrupt']);
    // A late llm.done of the aborted turn speaks nothing of the dropped text.
    h.down(frames.llmDone('t1'));
    expect(sentences(h)).toEqual([]);
    expect(h.kinds('down')).toEqual(['interrupt', 'llm.done']);
  });

  it('passes up frames through untouched', () => {
    const h = new Harness(new SentenceAggregator());
    const spoken = frames.spoken('t1', 'Hello.');
    h.up(spoken);
    expect(h.out.up).toEqual([spoken]);
  });
});
