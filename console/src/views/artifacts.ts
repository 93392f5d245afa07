import { ApiError, api, apiHeaders, fetchPolitely, type Answer } from '../api';
import { alertBox, h, show } from '../dom';
import { markdownNodes } from '../rich-text';

export type Artifact = Answer<'/artifacts'>['data'][number];

/** Where a list of a run's files comes from, and how a file is read and saved. */
export interface ArtifactSource {
  list: (executionId: string) => Promise<Artifact[]>;
  bytes: (artifact: Artifact) => Promise<Blob>;
  download: (artifact: Artifact) => Promise<void>;
}

const isMarkdown = (a: Artifact) => a.contentType.startsWith('text/markdown') || /\.(md|markdown)$/i.test(a.name);
const isText = (a: Artifact) => a.contentType.startsWith('text/') || a.contentType.startsWith('application/json');

const sizeOf = (bytes: number) =>
  bytes < 1024 ? `${bytes} B` : bytes < 1024 * 1024 ? `${(bytes / 1024).toFixed(1)} KB` : `${(bytes / 1024 / 1024).toFixed(1)} MB`;

/** The artifact's bytes: the download route wants the session's CSRF header, which a plain link cannot send. */
async function bytesOf(artifact: Artifact): Promise<Blob> {
  const res = await fetchPolitely(`/api/v1/artifacts/${encodeURIComponent(artifact.id)}/download`, { headers: apiHeaders(), credentials: 'same-origin' });
  if (!res.ok) throw new ApiError(res.status, 'ERROR', `The file could not be read (${res.status})`);
  return res.blob();
}

/** The console's files: listed and read through /api/v1, saved through a link to the bytes. */
const consoleArtifacts: ArtifactSource = {
  list: async (executionId) => (await api('/artifacts', { query: { executionId, limit: 100 } })).data,
  bytes: bytesOf,
  download: async (artifact) => {
    const url = URL.createObjectURL(await bytesOf(artifact));
    h('a', { href: url, download: artifact.name }).click();
    setTimeout(() => URL.revokeObjectURL(url), 60_000);
  },
};

/**
 * A run's files, under its output: each with Download and, for Markdown and text, a preview drawn
 * with the DOM API only (the document's own HTML shows as text; links only to the web or mail).
 * The console's come through /api/v1; the run view's (an MCP App) through the host's tool calls.
 */
export function artifactsSection(executionId: string, source: ArtifactSource = consoleArtifacts) {
  const list = h('div');
  const message = h('div', { role: 'status' });
  const refresh = async () => {
    let artifacts: Artifact[];
    try {
      artifacts = await source.list(executionId);
    } catch (error) {
      return show(list, alertBox(error instanceof ApiError ? error.message : 'The files could not be listed.'));
    }
    show(
      list,
      artifacts.length
        ? h(
            'ul',
            { class: 'plain', 'aria-label': 'Artifacts' },
            artifacts.map((artifact) => {
              const preview = h('div');
              const fail = (error: unknown) => show(message, alertBox(error instanceof ApiError ? error.message : 'The file could not be read.'));
              const download = async () => {
                try {
                  await source.download(artifact);
                } catch (error) {
                  fail(error);
                }
              };
              const showPreview = async () => {
                try {
                  const text = await (await source.bytes(artifact)).text();
                  show(
                    preview,
                    h(
                      'section',
                      { class: isMarkdown(artifact) ? 'preview markdown' : 'preview', 'aria-label': `Preview of ${artifact.name}` },
                      isMarkdown(artifact) ? markdownNodes(text) : h('pre', {}, text),
                    ),
                  );
                } catch (error) {
                  fail(error);
                }
              };
              return h(
                'li',
                { class: 'card' },
                h('strong', {}, artifact.name),
                ' ',
                h('span', { class: 'muted' }, `${artifact.contentType} · ${sizeOf(artifact.size)}`),
                h(
                  'div',
                  {},
                  h('button', { type: 'button', 'aria-label': `Download ${artifact.name}`, onclick: download }, 'Download'),
                  isText(artifact) ? h('button', { type: 'button', 'aria-label': `Preview ${artifact.name}`, onclick: showPreview }, 'Preview') : null,
                ),
                preview,
              );
            }),
          )
        : h('p', { class: 'muted' }, 'No files yet.'),
    );
  };
  const element = h('section', { 'aria-labelledby': 'artifacts-h' }, h('h2', { id: 'artifacts-h' }, 'Artifacts'), list, message);
  return { element, refresh };
}
