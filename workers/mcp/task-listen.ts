import {
  CLIENT_CAPABILITIES_META_KEY,
  MissingRequiredClientCapabilityError,
  SUBSCRIPTION_ID_META_KEY,
  type ClientCapabilities,
} from '@modelcontextprotocol/server';
import { z } from 'zod';
import { authorizeWithGrants } from '../auth/actor';
import type { CapabilityContext } from '../capabilities/capability';
import { sseStream, type OwnStream } from '../lib/sse';
import { TASKS_EXTENSION } from './client-capabilities';
import { taskAccess } from './server';
import { followTask } from './task-follow';
import { taskState, type TaskState } from './tasks';

/**
 * Task status notifications (the Tasks extension's `notifications/tasks`) on a 2026-07-28
 * `subscriptions/listen` stream: the client names the tasks in the filter's `taskIds`. The SDK
 * serves the stream and its list-change notifications but knows no extension fields, so the
 * acknowledgement gains the task ids agreed to here, and each task's notifications join the stream.
 */

/** The most tasks one listen follows: each holds a stream of its run's object (an execution's log, a workflow run's change notices). */
export const MAX_LISTENED_TASKS = 20;

const ListenParams = z.object({
  notifications: z.object({ taskIds: z.array(z.string().min(1).max(100)).max(MAX_LISTENED_TASKS).optional() }).optional(),
  _meta: z.object({ [CLIENT_CAPABILITIES_META_KEY]: z.custom<ClientCapabilities>().optional() }).optional(),
});

type Refusal = { code: number; message: string; data?: unknown; status: 200 | 400 };

/**
 * The task ids a listen request names (undefined when it names none), or why it is refused:
 * more than MAX_LISTENED_TASKS is invalid params; a client that does not declare the Tasks
 * extension is refused as the extension requires (`-32021`, HTTP 400 as for the task methods).
 */
export function listenedTaskIds(params: unknown): { taskIds?: string[] } | { refusal: Refusal } {
  const parsed = ListenParams.safeParse(params);
  if (!parsed.success)
    return { refusal: { code: -32602, message: `Invalid params: taskIds is a list of at most ${MAX_LISTENED_TASKS} task ids`, status: 200 } };
  const taskIds = parsed.data.notifications?.taskIds;
  if (taskIds === undefined) return {};
  if (parsed.data._meta?.[CLIENT_CAPABILITIES_META_KEY]?.extensions?.[TASKS_EXTENSION] === undefined) {
    const error = new MissingRequiredClientCapabilityError({ requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } });
    return { refusal: { code: error.code, message: error.message, data: error.data, status: 400 } };
  }
  return { taskIds: [...new Set(taskIds)] };
}

/** The tasks the server agrees to report on: those of the workspace the credential may read with `tasks/get`. */
export async function honoredTaskIds(ctx: CapabilityContext, taskIds: string[]): Promise<string[]> {
  const checked = await Promise.allSettled(
    taskIds.map(async (taskId) => {
      const access = taskAccess('tasks/get', taskId);
      if (access) await authorizeWithGrants(ctx.globalDb, access, ctx.actor, ctx.grantToken);
      await taskState(ctx, taskId);
    }),
  );
  return taskIds.filter((_, i) => checked[i]!.status === 'fulfilled');
}

const encoder = new TextEncoder();
/** Comment frames keep an idle stream (and proxies) from timing out, as the SDK's own do. */
const KEEP_ALIVE_MS = 15_000;

/** One JSON-RPC message as the SDK frames it on a listen stream. */
const messageFrame = (message: object) => `event: message\ndata: ${JSON.stringify(message)}\n\n`;

type Message = { id?: unknown; method?: string; params?: { notifications?: Record<string, unknown>; _meta?: Record<string, unknown> } };

const messageOf = (frame: string): Message | undefined => {
  const data = /^data: (.*)$/m.exec(frame);
  return data ? (JSON.parse(data[1]!) as Message) : undefined;
};

/** The SSE frames of a stream, each without its closing blank line. */
async function* framesOf(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
    buffer += chunk.value;
    for (let cut = buffer.indexOf('\n\n'); cut >= 0; cut = buffer.indexOf('\n\n')) {
      yield buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
    }
  }
}

/** A task's state as `notifications/tasks` sends it: what `tasks/get` answers, tagged with the subscription. */
const taskNotification = (task: TaskState, subscriptionId: unknown) => ({
  jsonrpc: '2.0',
  method: 'notifications/tasks',
  params: { ...task, _meta: { [SUBSCRIPTION_ID_META_KEY]: subscriptionId } },
});

/**
 * The SDK's listen answer with the tasks' notifications joined to it. The acknowledgement (its
 * first frame) gains `taskIds`; each task then reports its current state and every change
 * until it ends. The stream ends when the list changes it carries end (the SDK's graceful
 * result, passed on); a listen for tasks alone, which the SDK answers and ends at once, ends
 * with that result once every task has ended. `stop` aborts when the client goes, and is
 * aborted when the stream ends. An answer that is not a stream (a refusal) is passed on as is.
 */
export function withTaskNotifications(ctx: CapabilityContext, answer: Response, taskIds: string[], stop: AbortController): Response | OwnStream {
  if (answer.status !== 200 || !answer.body || !answer.headers.get('content-type')?.includes('text/event-stream')) return answer;
  const { writer, response } = sseStream();
  const write = (text: string) => writer.write(encoder.encode(text)).catch(() => stop.abort());
  const frames = framesOf(answer.body);
  let keepAlive: ReturnType<typeof setInterval> | undefined;
  const ended = (async () => {
    const first = await frames.next();
    const ack = first.done ? undefined : messageOf(first.value);
    if (!ack?.params?.notifications) return;
    const servesChanges = Object.keys(ack.params.notifications).length > 0;
    const notifications = { ...ack.params.notifications, ...(taskIds.length ? { taskIds } : {}) };
    await write(messageFrame({ ...ack, params: { ...ack.params, notifications } }));
    const subscriptionId = ack.params._meta?.[SUBSCRIPTION_ID_META_KEY];
    const tasks = Promise.all(
      taskIds.map((taskId) =>
        followTask(ctx, taskId, stop.signal, (task) => write(messageFrame(taskNotification(task, subscriptionId)))).catch((error: unknown) =>
          console.error(JSON.stringify({ level: 'error', message: 'task notifications stopped', taskId, error: String(error) })),
        ),
      ),
    );
    let result: string | undefined;
    const changes = (async () => {
      for await (const frame of frames) {
        const message = messageOf(frame);
        // The SDK's graceful end (the listen's result) goes last, after the tasks' notifications.
        if (message && message.method === undefined && message.id !== undefined) result = frame;
        else await write(`${frame}\n\n`);
      }
    })();
    if (!servesChanges) keepAlive = setInterval(() => void write(': keepalive\n\n'), KEEP_ALIVE_MS);
    // The SDK's stream of a listen for tasks alone has ended already; its result is read before ending this one.
    await (servesChanges ? changes : Promise.all([tasks, changes]));
    stop.abort();
    if (result) await write(`${result}\n\n`);
  })()
    .catch((error: unknown) => console.error(JSON.stringify({ level: 'error', message: 'listen stream failed', error: String(error) })))
    .finally(() => {
      clearInterval(keepAlive);
      stop.abort();
      return writer.close().catch(() => undefined);
    });
  return { response, ended };
}
