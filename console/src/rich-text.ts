import { h, type Kid } from './dom';
import { parseMarkdown, type Block, type Inline } from './markdown';

function inline(run: Inline): Node {
  if (run.kind === 'link') return h('a', { href: run.href, rel: 'noopener noreferrer nofollow', target: '_blank' }, run.text);
  if (run.kind === 'text') return document.createTextNode(run.text);
  return h(run.kind, {}, run.text);
}

const block = (b: Block): HTMLElement => {
  if (b.kind === 'heading') return h(`h${Math.min(b.level + 2, 6) as 3}`, {}, b.inlines.map(inline));
  if (b.kind === 'paragraph') return h('p', {}, b.inlines.map(inline));
  if (b.kind === 'code') return h('pre', {}, h('code', {}, b.text));
  return h(
    b.ordered ? 'ol' : 'ul',
    {},
    b.items.map((item) => h('li', {}, item.map(inline))),
  );
};

/**
 * Markdown drawn with the DOM API only: its HTML shows as text, links go only to the web or
 * mail (console/src/markdown.ts decides), and headings start below the page's own.
 */
export const markdownNodes = (text: string): Kid[] => parseMarkdown(text).map(block);

/**
 * Markdown drawn into `element` again each time its text grows (an answer as it streams): the
 * blocks unchanged since the last drawing keep their nodes, so each drawing builds only the block
 * being written and any after it.
 */
export function growingMarkdown(element: HTMLElement): (text: string) => void {
  let drawn: string[] = [];
  return (text) => {
    const blocks = parseMarkdown(text);
    const keys = blocks.map((b) => JSON.stringify(b));
    let kept = 0;
    while (kept < drawn.length && kept < keys.length && drawn[kept] === keys[kept]) kept++;
    while (element.childElementCount > kept) element.lastElementChild!.remove();
    element.append(...blocks.slice(kept).map(block));
    drawn = keys;
  };
}
