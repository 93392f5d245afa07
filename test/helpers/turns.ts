import type { TurnInput } from '../../workers/executions/events';
import type { TestUser } from './api';

/** A turn as the ExecutionSession hands it to the run tools: the user's, owner, no key, unless overridden. */
export const turnOf = (user: TestUser | null, extra: Partial<TurnInput> = {}): TurnInput => ({
  executionId: 1,
  workspaceId: user?.workspaceId ?? 'ws-tools',
  userId: user?.user.id ?? 'user-tools',
  role: 'owner',
  apiKeyId: null,
  requestId: 'req-tools',
  turnKey: 'exec_1:t',
  budget: 0,
  skillName: 'x',
  skillSlug: 'x',
  system: '',
  text: '',
  ...extra,
});
