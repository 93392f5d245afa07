/**
 * The Markdown the console previews (run artifacts), parsed into blocks of inline runs that the
 * view builds with the DOM API: nothing in a document reaches the page as markup, so raw HTML
 * shows as the text it is. A subset of our own rather than a library: headings, paragraphs,
 * lists, fenced code, emphasis, inline code and links cover what runs write, in about 2 KB,
 * and a library's HTML output would need sanitising before it could be shown.
 */
export type Inline = { kind: 'text' | 'strong' | 'em' | 'code'; text: string } | { kind: 'link'; text: string; href: string };

export type Block =
  | { kind: 'heading'; level: 1 | 2 | 3 | 4 | 5 | 6; inlines: Inline[] }
  | { kind: 'paragraph'; inlines: Inline[] }
  | { kind: 'list'; ordered: boolean; items: Inline[][] }
  | { kind: 'code'; text: string };

/** Links that may open from a preview: the web and mail. Anything else (javascript:, data:, a relative path) stays text. */
export function safeHref(raw: string): string | null {
  try {
    const url = new URL(raw);
    return ['http:', 'https:', 'mailto:'].includes(url.protocol) ? url.href : null;
  } catch {
    return null;
  }
}

/**
 * Each alternative scans only up to its own closing character, and a link's label stops at `[`
 * and its target at `]`, so no two failed attempts rescan the same text: the whole line is read
 * in linear time (a label that could hold `[` made a run of them quadratic: 30 KB took seconds).
 */
const INLINE = /(`[^`]+`)|(\*\*[^*]+\*\*)|(\*[^*\s][^*]*\*|_[^_\s][^_]*_)|!?\[([^[\]]*)\]\(([^)\s\]]*)\)/g;

export function inlines(text: string): Inline[] {
  const out: Inline[] = [];
  let at = 0;
  for (const match of text.matchAll(INLINE)) {
    if (match.index > at) out.push({ kind: 'text', text: text.slice(at, match.index) });
    const [token] = match;
    if (match[1]) out.push({ kind: 'code', text: token.slice(1, -1) });
    else if (match[2]) out.push({ kind: 'strong', text: token.slice(2, -2) });
    else if (match[3]) out.push({ kind: 'em', text: token.slice(1, -1) });
    else {
      // An image is shown as its link: a preview loads nothing from elsewhere.
      const label = match[4] ?? '';
      const target = match[5] ?? '';
      const href = safeHref(target);
      out.push(href ? { kind: 'link', text: label || href, href } : { kind: 'text', text: label || target });
    }
    at = match.index + token.length;
  }
  if (at < text.length) out.push({ kind: 'text', text: text.slice(at) });
  return out;
}

const LIST_ITEM = /^\s*(?:([-*+])|(\d+)[.)])\s+(.*)$/;
const HEADING_MARKS = /^(#{1,6})\s+/;

/**
 * `## Title ##`: the level and the text without its closing hashes. Written out, because as one
 * expression (`(.*?)\s*#*\s*$`) the end was retried cubically along a run of spaces: 3 KB froze the page.
 */
function heading(line: string): { level: 1 | 2 | 3 | 4 | 5 | 6; text: string } | null {
  const marks = HEADING_MARKS.exec(line);
  if (!marks) return null;
  let end = line.trimEnd().length;
  while (end > marks[0].length && line[end - 1] === '#') end--;
  return { level: marks[1]!.length as 1, text: line.slice(marks[0].length, end).trimEnd() };
}

export function parseMarkdown(source: string): Block[] {
  const blocks: Block[] = [];
  const lines = source.replace(/\r\n?/g, '\n').split('\n');
  let paragraph: string[] = [];
  const endParagraph = () => {
    if (paragraph.length) blocks.push({ kind: 'paragraph', inlines: inlines(paragraph.join(' ')) });
    paragraph = [];
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (/^\s*(```|~~~)/.test(line)) {
      endParagraph();
      const fence = line.trim().slice(0, 3);
      const code: string[] = [];
      while (++i < lines.length && !lines[i]!.trim().startsWith(fence)) code.push(lines[i]!);
      blocks.push({ kind: 'code', text: code.join('\n') });
      continue;
    }
    const title = heading(line);
    const item = LIST_ITEM.exec(line);
    if (title) {
      endParagraph();
      blocks.push({ kind: 'heading', level: title.level, inlines: inlines(title.text) });
    } else if (item) {
      endParagraph();
      const ordered = item[2] !== undefined;
      const last = blocks.at(-1);
      const list =
        last?.kind === 'list' && last.ordered === ordered ? last : (blocks[blocks.push({ kind: 'list', ordered, items: [] }) - 1] as Block & { kind: 'list' });
      list.items.push(inlines(item[3]!));
    } else if (line.trim() === '') endParagraph();
    else paragraph.push(line.trim());
  }
  endParagraph();
  return blocks;
}
