import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { evalAnswer } from '../setup/eval-model';
import { freePort, newAccount, until, type RunningService } from './helpers';
import { startPrepared } from './prepared';

/**
 * A skill eval end to end: the service (wrangler dev on the state `npm start` prepared) runs its
 * OpenAI-compatible provider, configured as a deployer would, against a model server in this
 * process (a service key, so the runs are charged; a user's own key runs free), scripted to answer
 * better with the skill's instructions than without (test/setup/eval-model.ts), and to grade
 * expectations by their quoted word.
 */

/** What the model server answered: whether the request had a system prompt, its last user message, and the text sent back. */
interface Answered {
  system: string | null;
  user: string;
  text: string;
}

/** The text an answer's stream carries: its deltas' content, in order. */
const streamedText = (chunks: string[]) =>
  chunks
    .filter((c) => c.startsWith('data: {'))
    .map((c) => (JSON.parse(c.slice(6)) as { choices: { delta?: { content?: string } }[] }).choices[0]?.delta?.content ?? '')
    .join('');

const CASES = [
  {
    id: 'steps',
    prompt: '[eval] list the release steps',
    checks: [{ type: 'contains', value: 'Checklist' }],
    expectations: ["The answer says 'Checklist'", "The answer names the 'release steps'"],
  },
  { id: 'greeting', prompt: '[eval] say hi', expectations: ["It says 'hi'"] },
];

type Run = { executionId: string; output: string; passed: boolean; expectations: { expectation: string; passed: boolean; reasoning: string }[] };

describe('a skill eval against a hosted model', () => {
  let service: RunningService;
  let model: Server;
  const answered: Answered[] = [];

  beforeAll(async () => {
    const port = await freePort();
    model = createServer((req, res) => {
      let raw = '';
      req.on('data', (d) => (raw += d));
      req.on('end', () => {
        if (req.headers.authorization !== 'Bearer e2e-service-key') {
          res.writeHead(401).end();
          return;
        }
        const body = JSON.parse(raw) as { messages: { role: string; content: unknown }[] };
        const chunks = req.url?.endsWith('/chat/completions') ? evalAnswer(body) : null;
        if (!chunks) {
          res.writeHead(500).end();
          return;
        }
        const text = (content: unknown) => (typeof content === 'string' ? content : JSON.stringify(content));
        const system = body.messages.find((m) => m.role === 'system');
        answered.push({
          system: system ? text(system.content) : null,
          user: text(body.messages.findLast((m) => m.role === 'user')!.content),
          text: streamedText(chunks),
        });
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        for (const chunk of chunks) res.write(chunk);
        res.end();
      });
    });
    await new Promise<void>((resolve) => model.listen(port, '127.0.0.1', resolve));
    service = await startPrepared(undefined, {
      args: ['--var', 'MODEL_PROVIDER:openai', '--var', 'OPENAI_API_KEY:e2e-service-key', '--var', `OPENAI_BASE_URL:http://127.0.0.1:${port}/v1`],
    });
  });

  afterAll(async () => {
    await service?.stop();
    await new Promise((r) => model?.close(r));
  });

  it('shows the difference the skill makes, grades what the model answered, and charges exactly its runs', async () => {
    const { token } = await newAccount(service.base, 'Eval E2E');
    const api = async (path: string, init: { method?: string; body?: unknown } = {}) => {
      const res = await fetch(`${service.base}${path}`, {
        method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
        headers: { 'x-auth-token': token, ...(init.body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
      });
      return { status: res.status, body: (await res.json()) as any };
    };
    const skill = {
      name: 'Release Checklist',
      description: 'Turns a release task into a checklist.',
      category: 'productivity',
      prompt: '# Release Checklist\n1. Answer as a checklist.',
      evals: CASES,
    };
    expect((await api('/api/v1/skills/release-checklist', { method: 'PUT', body: skill })).status).toBe(200);
    const before = (await api('/api/v1/billing/balance')).body.balance as number;

    const started = await api('/api/v1/skills/release-checklist/evals/run', { body: {} });
    expect(started.status).toBe(202);
    const job = await until('the eval to finish', async () => {
      const res = await api(`/api/v1/skills/release-checklist/evals/${started.body.id}`);
      return ['queued', 'running'].includes(res.body.status) ? undefined : res.body;
    });

    // The skill's instructions make the difference: case "steps" passes only with them.
    expect(job).toMatchObject({ status: 'succeeded', provider: 'openai', local: false, passRateWith: 1, passRateWithout: 0.5, difference: 0.5 });
    expect(job.cases.map((c: { passRateWith: number; passRateWithout: number }) => [c.passRateWith, c.passRateWithout])).toEqual([
      [1, 0],
      [1, 1],
    ]);

    // Every run's output is what the server answered to it, and every grade is the server's verdict on that output.
    const graders = answered.filter((a) => a.system?.startsWith('You grade'));
    for (const [index, testCase] of CASES.entries()) {
      const task = testCase.prompt.replace('[eval] ', '');
      const { with: withSkill, without } = job.cases[index].runs[0] as { with: Run; without: Run };
      const sides = [
        { run: withSkill, text: `Checklist: ${task}`, asked: (a: Answered) => a.system !== null && !a.system.startsWith('You grade') },
        { run: without, text: `Sure: ${task}`, asked: (a: Answered) => a.system === null },
      ];
      for (const { run, text, asked } of sides) {
        expect(answered.filter((a) => asked(a) && a.user.includes(testCase.prompt)).map((a) => a.text)).toEqual([text]);
        expect(run.output).toBe(text);
        const grading = graders.filter((g) => g.user.includes(`## The assistant's output\n${run.output}\n`));
        expect(grading).toHaveLength(1);
        const verdicts = (JSON.parse(grading[0]!.text) as { verdicts: { passed: boolean; reasoning: string }[] }).verdicts;
        expect(run.expectations).toEqual(
          testCase.expectations.map((expectation, i) => ({ expectation, passed: verdicts[i]!.passed, reasoning: verdicts[i]!.reasoning })),
        );
      }
    }
    expect(job.cases[0].runs[0].without).toMatchObject({ passed: false, checks: [{ passed: false }] });

    // The runs are in the history, tagged with the eval: two per case, and a grading run for each.
    const history = (await api('/api/v1/executions?channels=eval&limit=50')).body.items as { evalId: string; evalRole: string; cost: number; status: string }[];
    const runs = history.filter((e) => e.evalId === started.body.id);
    expect(runs.map((e) => e.evalRole).sort()).toEqual(['baseline', 'baseline', 'grader', 'grader', 'grader', 'grader', 'skill', 'skill']);
    expect(runs.every((e) => e.status === 'completed')).toBe(true);
    expect(answered).toHaveLength(runs.length);

    // The charge is exact: the balance fell by the runs' costs, which are the job's.
    const charged = runs.reduce((sum, e) => sum + Math.round(e.cost * 100), 0);
    expect(charged).toBeGreaterThan(0);
    expect(Math.round(job.cost * 100)).toBe(charged);
    const after = (await api('/api/v1/billing/balance')).body.balance as number;
    expect(Math.round((before - after) * 100)).toBe(charged);
  });
});
