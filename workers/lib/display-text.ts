/**
 * Characters that reorder or hide text rather than show it: controls (`\p{Cc}`), format
 * characters (`\p{Cf}`: the bidirectional embeddings, overrides, isolates and marks, zero-width
 * spaces and joiners, the word joiner, the byte order mark, tags), line and paragraph
 * separators, and the Hangul fillers, which render as blank letters. A right-to-left override
 * in an application's name can turn the words after it around, or make one name look like
 * another.
 */
const HIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\u115F\u1160\u3164\uFFA0]/gu;
const HIDDEN_BUT_NEWLINE = /(?!\n)[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\u115F\u1160\u3164\uFFA0]/gu;

/**
 * Text someone else chose (an OAuth client's name, a device's label, an agent's reason) made
 * safe to show a person deciding on it: each hidden or reordering character becomes the visible
 * U+FFFD, so a spoofing attempt shows instead of working. `lines` keeps line breaks.
 */
export const displayText = (text: string, options: { lines?: boolean } = {}): string => text.replace(options.lines ? HIDDEN_BUT_NEWLINE : HIDDEN, '\uFFFD');
