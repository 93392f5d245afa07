import { raw } from 'hono/html';
import type { Child, FC } from 'hono/jsx';

/**
 * What every HTML page of the service has around its body: the doctype, the language, the
 * viewport, no favicon request (the pages' CSPs allow data: images only) and the title with the
 * product's name. Pages that are not for search engines (all but the API reference) say so.
 */
export const HtmlDocument: FC<{ title: string; indexable?: boolean; head?: Child; children?: Child }> = ({ title, indexable = false, head, children }) => (
  <>
    {raw('<!doctype html>')}
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        {indexable ? null : <meta name="robots" content="noindex" />}
        <link rel="icon" href="data:," />
        <title>{title} · Workspace AI Skills</title>
        {head}
      </head>
      {children}
    </html>
  </>
);
