import { h } from './dom';
import { growingMarkdown } from './rich-text';

/** What a run's Output shows: its answer's text as it streams, the person's messages, its tool calls, notes. */
export type Part = { kind: 'text' | 'you' | 'info'; text: string } | { kind: 'tool'; text: string; detail: string };

/**
 * A run's Output region, for the console's run page and the run view (an MCP App). The answer is
 * drawn as Markdown while it streams, at most once a frame (the parser is linear and blocks
 * already drawn keep their nodes). The region is the live region, busy while an answer grows, so
 * a screen reader reads the answer when it is whole instead of each paragraph again as it grows.
 */
export function outputRegion() {
  const output = h('div', { class: 'output' });
  const element = h(
    'section',
    { 'aria-labelledby': 'output-h', class: 'output-section', 'aria-live': 'polite', 'aria-busy': 'false' },
    h('h2', { id: 'output-h' }, 'Output'),
    output,
  );
  let answer: { text: string; draw: (text: string) => void } | undefined;
  let frame = 0;
  const drawAnswer = () => {
    frame = 0;
    answer?.draw(answer.text);
  };
  /** Ends the answer being written: it is drawn whole, and the next text starts a new one. */
  const finishAnswer = () => {
    cancelAnimationFrame(frame);
    drawAnswer();
    answer = undefined;
    element.setAttribute('aria-busy', 'false');
  };
  const drawPart = (part: Part) => {
    if (part.kind === 'text') {
      if (!answer) {
        answer = { text: '', draw: growingMarkdown(output.appendChild(h('div', { class: 'markdown' }))) };
        element.setAttribute('aria-busy', 'true');
      }
      answer.text += part.text;
      frame ||= requestAnimationFrame(drawAnswer);
      return;
    }
    finishAnswer();
    if (part.kind === 'you') output.append(h('p', { class: 'you' }, h('strong', {}, 'You: '), part.text));
    else if (part.kind === 'tool') output.append(h('details', { class: 'tool' }, h('summary', {}, `Tool: ${part.text}`), h('pre', {}, part.detail)));
    else output.append(h('p', { class: 'muted' }, part.text));
  };
  return { element, drawPart, finishAnswer };
}
