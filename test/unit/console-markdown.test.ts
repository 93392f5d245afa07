import { describe, expect, it } from 'vitest';
import { inlines, parseMarkdown, safeHref } from '../../console/src/markdown';

/** The console's artifact preview: what a document may turn into on the page. */
describe('the console Markdown preview', () => {
  it('reads headings, paragraphs, lists, fenced code and inline marks', () => {
    const doc = '# Notes: Summary\n\nSome **bold** and *soft* text\nwith `code`.\n\n- one\n- two\n\n1. first\n2. second\n\n```\n<b>kept as text</b>\n```';
    expect(parseMarkdown(doc)).toEqual([
      { kind: 'heading', level: 1, inlines: [{ kind: 'text', text: 'Notes: Summary' }] },
      {
        kind: 'paragraph',
        inlines: [
          { kind: 'text', text: 'Some ' },
          { kind: 'strong', text: 'bold' },
          { kind: 'text', text: ' and ' },
          { kind: 'em', text: 'soft' },
          { kind: 'text', text: ' text with ' },
          { kind: 'code', text: 'code' },
          { kind: 'text', text: '.' },
        ],
      },
      { kind: 'list', ordered: false, items: [[{ kind: 'text', text: 'one' }], [{ kind: 'text', text: 'two' }]] },
      { kind: 'list', ordered: true, items: [[{ kind: 'text', text: 'first' }], [{ kind: 'text', text: 'second' }]] },
      { kind: 'code', text: '<b>kept as text</b>' },
    ]);
  });

  it('keeps raw HTML as text and links only to the web or mail', () => {
    expect(parseMarkdown('<script>alert(1)</script>\n\n<img src=x onerror=alert(1)>')).toEqual([
      { kind: 'paragraph', inlines: [{ kind: 'text', text: '<script>alert(1)</script>' }] },
      { kind: 'paragraph', inlines: [{ kind: 'text', text: '<img src=x onerror=alert(1)>' }] },
    ]);
    expect(
      inlines(
        '[site](https://example.com/a) [x](javascript:alert(1)) [d](data:text/html,hi) [rel](/api/v1/profile) ![pic](https://example.com/p.png) [m](mailto:a@example.com)',
      ),
    ).toEqual([
      { kind: 'link', text: 'site', href: 'https://example.com/a' },
      { kind: 'text', text: ' ' },
      { kind: 'text', text: 'x' },
      { kind: 'text', text: ') ' }, // the target ends at its first parenthesis; what is left is text
      { kind: 'text', text: 'd' },
      { kind: 'text', text: ' ' },
      { kind: 'text', text: 'rel' },
      { kind: 'text', text: ' ' },
      { kind: 'link', text: 'pic', href: 'https://example.com/p.png' },
      { kind: 'text', text: ' ' },
      { kind: 'link', text: 'm', href: 'mailto:a@example.com' },
    ]);
    expect(safeHref('JavaScript:alert(1)')).toBeNull();
    expect(safeHref(' javascript:alert(1)')).toBeNull();
  });
});
