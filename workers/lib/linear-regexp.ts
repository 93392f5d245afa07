import { RE2JS } from 're2js';

/**
 * Regular expressions that people send us (JSON Schema `pattern` and `patternProperties`) run on
 * RE2 (re2js, pure JavaScript), whose matching time is linear in the input: a backtracking
 * engine takes seconds on `^(a+)+$` against 42 characters, and that blocks every request on the
 * isolate. A pattern must be valid ECMAScript (the JSON Schema dialect) and within what RE2 runs:
 * no backreferences and no lookaround.
 */

const compiled = new Map<string, RE2JS>();
/** Distinct patterns kept compiled; past it the cache starts afresh (schemas repeat a few patterns). */
const MAX_COMPILED = 256;

const NativeRegExp = RegExp;

/** `\k<name>`: in Unicode mode always a backreference, which RE2's translation would read as the letter k. */
function hasNamedBackreference(source: string): boolean {
  for (let i = 0; i < source.length; i++) {
    if (source[i] !== '\\') continue;
    if (source[i + 1] === 'k') return true;
    i++;
  }
  return false;
}

/** The RE2 form of an ECMAScript pattern; a SyntaxError for what RE2 cannot run in linear time. */
export function linearPattern(source: string): RE2JS {
  const cached = compiled.get(source);
  if (cached) return cached;
  // Only parsed, never run: parsing is linear, so this costs nothing a hostile pattern can exploit.
  new NativeRegExp(source, 'u');
  if (hasNamedBackreference(source)) throw new SyntaxError('backreferences are not supported');
  let pattern: RE2JS;
  try {
    pattern = RE2JS.compile(RE2JS.translateRegExp(source));
  } catch (error) {
    throw new SyntaxError(error instanceof Error ? error.message : String(error));
  }
  if (compiled.size >= MAX_COMPILED) compiled.clear();
  compiled.set(source, pattern);
  return pattern;
}

/** Told the work of each test: the text's length times the pattern's size (RE2's program size). */
let spend: (units: number) => void = () => {};

/** What the JSON Schema validator asks of a RegExp: construct from source, then `test`. */
class LinearRegExp {
  readonly #pattern: RE2JS;
  constructor(source: string) {
    this.#pattern = linearPattern(String(source));
  }
  test(input: string): boolean {
    const text = String(input);
    // Linear in the text, but times the pattern's size when RE2 falls back from its DFA.
    spend(text.length * this.#pattern.programSize());
    return this.#pattern.test(text);
  }
}

/**
 * Runs `work` (synchronous) with the global RegExp constructor answering with linear-time
 * patterns, each test's work told to `account`. @cfworker/json-schema compiles `pattern`, `patternProperties` and the `regex` format
 * with `new RegExp(source, 'u')` and offers no way to plug in an engine; the swap covers exactly
 * those calls, since regular-expression literals (its own fixed formats) never go through the
 * global, and nothing else runs before the native constructor is back.
 */
export function withLinearRegExp<T>(work: () => T, account: (units: number) => void): T {
  globalThis.RegExp = LinearRegExp as unknown as RegExpConstructor;
  spend = account;
  try {
    return work();
  } finally {
    globalThis.RegExp = NativeRegExp;
    spend = () => {};
  }
}
