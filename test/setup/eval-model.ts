/**
 * The BYOK fixture model's answers to skill evals, in OpenAI's streaming chunks, scripted so a
 * test can tell what every grade should be:
 * - a run asked an "[eval]" task answers "Checklist: <the task>" when it has a system prompt (the
 *   skill's instructions) and "Sure: <the task>" without one (the baseline);
 * - a grading run (the grader's system prompt) passes each expectation whose 'quoted' word the
 *   graded output contains, and says so in its reasoning.
 * Null for any other request.
 */
interface ChatRequest {
  messages?: { role: string; content?: unknown }[];
}

const GRADER_OPENING = 'You grade the output of an AI assistant';

const textOf = (content: unknown) => (typeof content === 'string' ? content : JSON.stringify(content ?? ''));

function chunks(text: string): string[] {
  const chunk = (choices: unknown[], usage: unknown = null) =>
    `data: ${JSON.stringify({ id: 'chatcmpl-Eval', object: 'chat.completion.chunk', created: 1731600000, model: 'gpt-4o-mini-2024-07-18', choices, usage })}\n\n`;
  const delta = (d: unknown, finish_reason: string | null = null) => chunk([{ index: 0, delta: d, logprobs: null, finish_reason }]);
  return [
    delta({ role: 'assistant', content: '' }),
    delta({ content: text }),
    delta({}, 'stop'),
    chunk([], { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110 }),
    'data: [DONE]\n\n',
  ];
}

/** The grader's verdicts on the expectations listed in its input, for the output quoted there. */
function verdicts(input: string): string {
  const output = /## The assistant's output\n([\s\S]*?)\n\n## Expectations/.exec(input)?.[1] ?? '';
  const expectations = (input.split('## Expectations\n')[1] ?? '').split('\n').filter((line) => /^\d+\. /.test(line));
  return JSON.stringify({
    verdicts: expectations.map((line, i) => {
      const word = /'([^']+)'/.exec(line)?.[1] ?? '';
      const passed = word !== '' && output.includes(word);
      return { expectation: i + 1, passed, reasoning: `The output ${passed ? 'contains' : 'lacks'} '${word}'.` };
    }),
  });
}

export function evalAnswer(body: unknown): string[] | null {
  const messages = (body as ChatRequest)?.messages ?? [];
  const system = messages.find((m) => m.role === 'system');
  const user = textOf(messages.findLast((m) => m.role === 'user')?.content);
  if (system && textOf(system.content).startsWith(GRADER_OPENING)) return chunks(verdicts(user));
  const task = /\[eval\] (.*)/.exec(user)?.[1];
  if (task === undefined) return null;
  return chunks(system ? `Checklist: ${task}` : `Sure: ${task}`);
}
