import { launcherNow } from '../auth/launcher';
import type { Env } from '../env';
import type { TurnInput } from '../services/execution-events';
import type { AgentTool } from './agent-loop';

/**
 * A turn's tools, each call made for the turn's launcher as it stands at that call: the
 * launching credential is read again and the tools are made for it, so a scope taken off the
 * credential since the turn began is refused by the tool's own check, which names it. A
 * launcher revoked, signed out or expired refuses the call (and every later one) with the
 * reason, which `refusal` then answers, so the turn can stop.
 */
export function actingForLauncher(env: Env, turn: TurnInput, toolsFor: (turn: TurnInput) => AgentTool[]) {
  let refusal: string | undefined;
  const tools = toolsFor(turn).map((tool): AgentTool => ({
    ...tool,
    run: async (args, call) => {
      if (refusal === undefined) {
        const launcher = await launcherNow(env, turn.actor);
        if (launcher.ok)
          return toolsFor({ ...turn, actor: launcher.actor })
            .find((t) => t.spec.name === tool.spec.name)!
            .run(args, call);
        refusal = launcher.reason;
      }
      return { content: refusal, isError: true };
    },
  }));
  return { tools, refusal: (): string | undefined => refusal };
}
