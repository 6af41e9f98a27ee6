/**
 * A deterministic, offline text embedding: feature hashing of normalised, lightly stemmed
 * words, word bigrams, character trigrams and a small built-in concept table, folded into a
 * fixed number of signed dimensions and L2-normalised.
 *
 * It is the control plane's local embedder (no network, sandbox default) and what the OpenAI
 * simulator answers on `/v1/embeddings`, so a paraphrase search behaves the same through either.
 * It is lexical, not semantic: texts match when they share words, word stems, spelling
 * fragments or one of the concepts below ("opening hours" ~ "what time do you open",
 * "price" ~ "cost"). Paraphrases outside the table with no shared words do not match.
 *
 * Changing anything here changes the vectors: bump {@link HASH_EMBEDDING_MODEL} so that stored
 * vectors of the old version are never compared with new ones.
 */

/** The model name recorded with vectors made at {@link HASH_EMBEDDING_DIMENSIONS}. */
export const HASH_EMBEDDING_MODEL = 'local-hash-384-v1';
export const HASH_EMBEDDING_DIMENSIONS = 384;

/** Feature weights: concepts count most, spelling fragments least (they only rescue inflections and typos). */
const WEIGHT = { concept: 1.6, word: 1, bigram: 0.6, trigram: 0.22 } as const;

/**
 * Words that carry no topic. Removed from word and bigram features, but still seen by the
 * concept phrases ("how much", "what time"), which are matched before removal.
 */
const STOPWORDS = new Set(
  (
    'a an the and or but if then else of to in on at by for with from into onto about as is are was were be been being am ' +
    'do does did doing done have has had having i me my we our us you your he him his she her it its they them their this that ' +
    'these those there here what which who whom whose when where why how can could would should will shall may might must ' +
    'not no yes so too very just also than any some all each every other such only own same again further once up down out ' +
    'off over under more most few both nor s t don get got please tell know let like want need'
  ).split(' '),
);

/**
 * Concepts: each line is a concept id and the words or phrases (space-separated words,
 * listed unstemmed; they are stemmed when the table is built) that evoke it.
 */
const CONCEPTS: Record<string, string[]> = {
  hours: ['opening hours', 'open', 'opening', 'opens', 'close', 'closing', 'closes', 'closed', 'hours', 'what time', 'when are you', 'business hours', 'timetable', 'schedule'],
  price: ['price', 'prices', 'pricing', 'cost', 'costs', 'fee', 'fees', 'charge', 'charges', 'how much', 'rate', 'rates', 'tariff', 'expensive', 'cheap', 'afford', 'quote', 'pay for'],
  booking: ['booking', 'book', 'reservation', 'reserve', 'appointment', 'table for', 'slot', 'availability', 'available'],
  refund: ['refund', 'refunds', 'money back', 'reimburse', 'reimbursement', 'repay', 'return policy', 'give back', 'chargeback'],
  cancel: ['cancel', 'cancellation', 'cancelling', 'call off', 'no show', 'reschedule'],
  location: ['address', 'location', 'located', 'where are you', 'directions', 'find you', 'map', 'street', 'nearest', 'get there'],
  contact: ['phone', 'telephone', 'call', 'email', 'contact', 'reach', 'phone number', 'speak to', 'talk to'],
  parking: ['parking', 'park', 'car park', 'garage', 'valet'],
  delivery: ['delivery', 'deliver', 'shipping', 'ship', 'shipment', 'courier', 'dispatch', 'postage', 'arrive'],
  payment: ['payment', 'pay', 'card', 'credit card', 'debit', 'cash', 'invoice', 'billing', 'bill', 'paypal', 'checkout'],
  food: ['menu', 'dish', 'dishes', 'food', 'meal', 'eat', 'cuisine', 'dessert', 'lunch', 'dinner', 'breakfast'],
  vegan: ['vegan', 'vegetarian', 'plant based', 'meat free', 'dairy free'],
  allergy: ['allergy', 'allergies', 'allergen', 'allergic', 'gluten', 'nut', 'nuts', 'lactose', 'intolerance', 'coeliac', 'celiac'],
  pets: ['pet', 'pets', 'dog', 'dogs', 'cat', 'animal', 'animals'],
  children: ['child', 'children', 'kid', 'kids', 'baby', 'toddler', 'family', 'high chair'],
  discount: ['discount', 'offer', 'deal', 'promotion', 'promo', 'coupon', 'voucher', 'sale'],
  warranty: ['warranty', 'guarantee', 'guaranteed', 'repair', 'broken', 'faulty', 'defect'],
  account: ['account', 'login', 'log in', 'sign in', 'password', 'username', 'profile'],
  staff: ['staff', 'employee', 'manager', 'team', 'agent', 'human', 'representative'],
  accessibility: ['wheelchair', 'accessible', 'accessibility', 'disabled', 'step free', 'ramp', 'lift', 'elevator'],
  weekend: ['weekend', 'weekends', 'saturday', 'sunday'],
  weekday: ['weekday', 'weekdays', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday'],
  holiday: ['holiday', 'holidays', 'christmas', 'easter', 'bank holiday', 'public holiday', 'new year'],
  wifi: ['wifi', 'wi fi', 'internet', 'wireless'],
  size: ['size', 'sizes', 'capacity', 'seats', 'large', 'small', 'big', 'people', 'guests', 'group'],
  problem: ['problem', 'issue', 'error', 'fault', 'not working', 'trouble', 'complaint', 'complain'],
  deadline: ['deadline', 'how long', 'duration', 'takes', 'wait', 'waiting', 'minutes', 'days', 'weeks'],
};

/** Irregular forms the suffix rules below would miss. */
const IRREGULAR: Record<string, string> = { children: 'child', people: 'person', men: 'man', women: 'woman', bought: 'buy', paid: 'pay', took: 'take', went: 'go' };

const SUFFIXES = ['ational', 'ation', 'ment', 'ness', 'ing', 'ed', 'er', 'ly', 'able', 'ible', 'ful'];

/**
 * A light English stemmer: enough to fold plurals and common verb and noun endings
 * (reservations → reserv, booked → book, opening → open). Words under four letters and
 * digits are left alone.
 */
export function stemWord(word: string): string {
  const irregular = IRREGULAR[word];
  if (irregular !== undefined) return irregular;
  if (word.length < 4 || /\d/.test(word)) return word;
  let w = word;
  if (w.endsWith('ies') && w.length > 4) w = `${w.slice(0, -3)}y`;
  else if (w.endsWith('sses')) w = w.slice(0, -2);
  else if (w.endsWith('s') && !w.endsWith('ss') && !w.endsWith('us') && !w.endsWith('is')) w = w.slice(0, -1);
  // Two rounds, so stacked endings fold to one stem: delivered → deliver → deliv, like delivery's "deliver".
  for (let round = 0; round < 2; round++) {
    const suffix = SUFFIXES.find((x) => w.endsWith(x) && w.length - x.length >= 3);
    if (suffix === undefined) break;
    w = w.slice(0, -suffix.length);
    // planned → plan, shipping → ship (undouble), but not fall → fal
    if (/([b-df-hj-np-tv-z])\1$/.test(w) && !/(ll|ss|zz)$/.test(w)) w = w.slice(0, -1);
  }
  if (w.endsWith('e') && w.length > 4) w = w.slice(0, -1);
  if (w.endsWith('y') && w.length > 4) w = `${w.slice(0, -1)}i`;
  return w;
}

/** Lower case, accents removed, split into runs of letters and digits. */
export function normaliseWords(text: string): string[] {
  return (
    text
      .normalize('NFKD')
      .replace(/\p{M}+/gu, '')
      .toLowerCase()
      .match(/[\p{L}\p{N}]+/gu) ?? []
  );
}

/** Concept ids in table order; concept i is feature i of its own kind. */
const CONCEPT_IDS = Object.keys(CONCEPTS);

/** Concept index by phrase: stemmed words joined with a space. */
const PHRASES = new Map<string, number>();
/** First stems of phrases of two words or more, so most words skip the phrase lookup. */
const PHRASE_STARTS = new Set<string>();
let longestPhrase = 1;
CONCEPT_IDS.forEach((concept, index) => {
  for (const phrase of CONCEPTS[concept] ?? []) {
    const stems = normaliseWords(phrase).map(stemWord);
    longestPhrase = Math.max(longestPhrase, stems.length);
    PHRASES.set(stems.join(' '), index);
    if (stems.length > 1) PHRASE_STARTS.add(stems[0] as string);
  }
});

/** 32-bit FNV-1a over UTF-16 code units, finished with murmur3's mixer to spread the bits. */
function hashString(s: string, seed: number): number {
  let h = 0x811c9dc5 ^ seed;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return mix32(h);
}

function mix32(x: number): number {
  let h = x;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

// Seeds keep the feature kinds apart: the word "open" and the trigram "ope" never share a hash by construction.
const SEED = { word: 0x1b873593, bigram: 0x2f9c2a4b, trigram: 0x5bd1e995, empty: 0x7f4a7c15 } as const;

interface WordInfo {
  stem: string;
  stop: boolean;
  stemHash: number;
  /** Index of the concept the word alone evokes, or -1. */
  concept: number;
  /** Hashes of the trigrams of `^word$`, for words of four letters or more. */
  trigrams: number[];
}

/** Per-word work memoised: text is Zipfian, so most words of a chunk were seen before. Bounded. */
const WORD_CACHE = new Map<string, WordInfo>();
const WORD_CACHE_MAX = 50_000;

function wordInfo(word: string): WordInfo {
  let info = WORD_CACHE.get(word);
  if (info !== undefined) return info;
  const stem = stemWord(word);
  const trigrams: number[] = [];
  if (word.length >= 4) {
    const padded = `^${word}$`;
    for (let j = 0; j + 3 <= padded.length; j++) trigrams.push(hashString(padded.slice(j, j + 3), SEED.trigram));
  }
  info = { stem, stop: STOPWORDS.has(word), stemHash: hashString(stem, SEED.word), concept: PHRASES.get(stem) ?? -1, trigrams };
  if (WORD_CACHE.size >= WORD_CACHE_MAX) WORD_CACHE.clear();
  WORD_CACHE.set(word, info);
  return info;
}

/** Term frequencies of one text's features, by kind (hashed features keyed by their 32-bit hash). */
interface Features {
  concepts: Float64Array;
  words: Map<number, number>;
  bigrams: Map<number, number>;
  trigrams: Map<number, number>;
}

function bump(map: Map<number, number>, key: number): void {
  map.set(key, (map.get(key) ?? 0) + 1);
}

function extractFeatures(text: string): Features {
  const infos = normaliseWords(text).map(wordInfo);
  const f: Features = { concepts: new Float64Array(CONCEPT_IDS.length), words: new Map(), bigrams: new Map(), trigrams: new Map() };
  // Concepts: the longest phrase at each position, over all words (stopwords included: "what time").
  for (let i = 0; i < infos.length; ) {
    const info = infos[i] as WordInfo;
    let matched = 0;
    if (PHRASE_STARTS.has(info.stem)) {
      for (let n = Math.min(longestPhrase, infos.length - i); n >= 2 && matched === 0; n--) {
        const concept = PHRASES.get(infos.slice(i, i + n).map((w) => w.stem).join(' '));
        if (concept !== undefined) {
          f.concepts[concept] = (f.concepts[concept] as number) + 1;
          matched = n;
        }
      }
    }
    if (matched === 0 && info.concept >= 0) {
      f.concepts[info.concept] = (f.concepts[info.concept] as number) + 1;
      matched = 1;
    }
    i += Math.max(matched, 1);
  }
  let previous = -1;
  for (const info of infos) {
    if (info.stop) {
      previous = -1;
      continue;
    }
    bump(f.words, info.stemHash);
    if (previous !== -1) bump(f.bigrams, mix32(Math.imul(previous, 0x9e3779b1) ^ info.stemHash ^ SEED.bigram));
    previous = info.stemHash;
    for (const t of info.trigrams) bump(f.trigrams, t);
  }
  return f;
}

/** Damped term frequency: a word repeated through a long chunk does not drown everything else. */
const damp = (tf: number): number => 1 + Math.log(tf);

/**
 * The embedding of `text` in `dimensions` dimensions (default 384), L2-normalised.
 * Deterministic across processes and machines. A text with no letters or digits gets one
 * fixed unit vector (so it is comparable, and similar only to other such texts).
 */
export function hashEmbedding(text: string, dimensions: number = HASH_EMBEDDING_DIMENSIONS): Float32Array {
  if (!Number.isInteger(dimensions) || dimensions < 1) throw new RangeError(`dimensions must be a positive integer, got ${dimensions}`);
  const sums = new Float64Array(dimensions);
  const f = extractFeatures(text);
  // Concepts are few and decisive, so each gets a dimension of its own when there is room
  // (one hash collision could otherwise cancel the very feature a paraphrase relies on);
  // everything else is hashed into the remaining dimensions, each feature into two slots
  // with a sign each, so one collision only costs half a feature and cancels on average.
  const reserved = dimensions >= 4 * CONCEPT_IDS.length ? CONCEPT_IDS.length : 0;
  const hashed = dimensions - reserved;
  const spread = (h: number, weight: number): void => {
    const w = weight * Math.SQRT1_2;
    const h2 = mix32(h ^ 0x68e31da4);
    const a = reserved + ((h >>> 1) % hashed);
    const b = reserved + ((h2 >>> 1) % hashed);
    sums[a] = (sums[a] as number) + (h & 1 ? w : -w);
    sums[b] = (sums[b] as number) + (h2 & 1 ? w : -w);
  };
  let any = false;
  f.concepts.forEach((tf, i) => {
    if (tf === 0) return;
    any = true;
    if (reserved > 0) sums[i] = (sums[i] as number) + WEIGHT.concept * damp(tf);
    else spread(hashString(CONCEPT_IDS[i] as string, SEED.word ^ 0xc0ce), WEIGHT.concept * damp(tf));
  });
  for (const [map, weight] of [
    [f.words, WEIGHT.word],
    [f.bigrams, WEIGHT.bigram],
    [f.trigrams, WEIGHT.trigram],
  ] as const) {
    for (const [h, tf] of map) spread(h, weight * damp(tf));
    any ||= map.size > 0;
  }
  if (!any) spread(SEED.empty, 1);
  let norm = 0;
  for (const v of sums) norm += v * v;
  norm = Math.sqrt(norm);
  // All features cancelling exactly is possible in principle; fall back to the empty-text vector.
  if (norm === 0) return hashEmbedding('', dimensions);
  const out = new Float32Array(dimensions);
  for (let i = 0; i < dimensions; i++) out[i] = (sums[i] as number) / norm;
  return out;
}
