/**
 * The BYOK fixture model's tool-calling behaviours, in OpenAI's streaming chunks: when a request
 * offers one of these tools (and the user asked for it), the model calls it, then answers with
 * what the tool returned. Null when no behaviour applies (the scenario's own answer is used).
 */
interface ChatRequest {
  tools?: { function?: { name?: string } }[];
  messages?: { role: string; content?: unknown; tool_call_id?: string }[];
}

interface Behaviour {
  tool: string;
  /** The call's arguments for this request, or null when the model should not call the tool. */
  args: (request: ChatRequest) => Record<string, unknown> | null;
  reply: (result: string) => string;
}

const lastUserText = (request: ChatRequest) => {
  const content = request.messages?.findLast((m) => m.role === 'user')?.content;
  return typeof content === 'string' ? content : JSON.stringify(content ?? '');
};

const BEHAVIOURS: Behaviour[] = [
  // A run asked to "http_request {json}" makes exactly that request, as a hostile input would have
  // it; one asked to "call <url> with <NAME>" sends the bound secret NAME as a bearer token. First,
  // so a run with a GitHub connector can be asked too.
  {
    tool: 'http_request',
    args: (request) => {
      const text = lastUserText(request);
      const exact = /http_request (\{.*\})/s.exec(text);
      if (exact) return JSON.parse(exact[1]!) as Record<string, unknown>;
      const asked = /call (\S+) with ([A-Z_][A-Z0-9_]*)/.exec(text);
      return asked ? { url: asked[1], method: 'POST', headers: { authorization: `Bearer \${${asked[2]}}` }, body: 'hello' } : null;
    },
    reply: (result) => `The service answered: ${result}`,
  },
  // A run started with a GitHub connector reads the README.
  { tool: 'read_repository_file', args: () => ({ path: 'README.md' }), reply: (result) => `The README says: ${result}` },
  // A chat turn asked to "start workflow <id>" starts it.
  {
    tool: 'start_workflow',
    args: (request) => {
      const asked = /start workflow ([\w:-]+)/i.exec(lastUserText(request));
      return asked ? { workflowId: asked[1] } : null;
    },
    reply: (result) => result,
  },
  // A run asked to "read memory" reads the workspace's working memory.
  { tool: 'read_memory', args: (request) => (/read memory/i.test(lastUserText(request)) ? {} : null), reply: (result) => `Memory: ${result}` },
];

export function toolCallingAnswer(body: unknown): string[] | null {
  const request = body as ChatRequest;
  const offered = (name: string) => request?.tools?.some((t) => t.function?.name === name);
  const chunk = (choices: unknown[], usage: unknown = null) =>
    `data: ${JSON.stringify({ id: 'chatcmpl-Tool', object: 'chat.completion.chunk', created: 1731600000, model: 'gpt-4o-mini-2024-07-18', choices, usage })}\n\n`;
  const delta = (d: unknown, finish_reason: string | null = null) => chunk([{ index: 0, delta: d, logprobs: null, finish_reason }]);
  const usage = chunk([], { prompt_tokens: 200, completion_tokens: 20, total_tokens: 220 });
  for (const behaviour of BEHAVIOURS) {
    if (!offered(behaviour.tool)) continue;
    // Only this behaviour's own call is answered by it: http_request is offered to every run.
    const result = request?.messages?.find((m) => m.role === 'tool' && m.tool_call_id === `call_${behaviour.tool}`);
    if (result)
      return [
        delta({ role: 'assistant', content: '' }),
        delta({ content: behaviour.reply(String(result.content)) }),
        delta({}, 'stop'),
        usage,
        'data: [DONE]\n\n',
      ];
    const args = behaviour.args(request);
    if (!args) continue;
    return [
      delta({ role: 'assistant', content: null }),
      delta({ tool_calls: [{ index: 0, id: `call_${behaviour.tool}`, type: 'function', function: { name: behaviour.tool, arguments: '' } }] }),
      delta({ tool_calls: [{ index: 0, function: { arguments: JSON.stringify(args) } }] }),
      delta({}, 'tool_calls'),
      usage,
      'data: [DONE]\n\n',
    ];
  }
  return null;
}
