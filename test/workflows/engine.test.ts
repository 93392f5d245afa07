import { describe, expect, it } from 'vitest';
import { signUp } from '../helpers/api';
import { definition, install, launch, mapping, waitForRun } from '../helpers/workflows';

describe('a mapping workflow through the queue', () => {
  it('runs every step and puts the output on snapshot.result', async () => {
    const user = await signUp();
    await install(
      user,
      'greet',
      definition('greet', [
        mapping('hello', { greeting: { template: 'Hello ${initData.name}' }, who: { initData: true, path: 'name' } }),
        mapping('shout', { text: { step: 'hello', path: 'greeting' }, ws: { requestContextPath: 'workspaceId' }, fixed: { value: [1, 2] } }),
      ]),
    );
    const runId = await launch(user, 'greet', { name: 'Ada' });
    const { run, steps } = await waitForRun(user, runId);
    expect(run.status).toBe('success');
    expect(run.snapshot.result).toEqual({ text: 'Hello Ada', ws: user.workspaceId, fixed: [1, 2] });
    expect(steps).toEqual({
      hello: { status: 'success', output: { greeting: 'Hello Ada', who: 'Ada' } },
      shout: { status: 'success', output: { text: 'Hello Ada', ws: user.workspaceId, fixed: [1, 2] } },
    });
  });
});
