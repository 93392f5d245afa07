import { App, applyDocumentTheme, type McpUiHostContext } from '@modelcontextprotocol/ext-apps';
import type { CallToolResult } from '@modelcontextprotocol/client';
import { ApiError, type Answer } from './api';
import { alertBox, h, show, statusBadge } from './dom';
import { outputRegion } from './run-output';
import { artifactsSection, type Artifact, type ArtifactSource } from './views/artifacts';
import { workflowRunPanel, type Entry } from './workflow-run';

/**
 * The run view, an MCP App (docs/mcp.md, The run view): the host hands it the result of
 * execute-skill, get-execution-status, start-workflow or get-workflow-run, and it draws that run
 * with the console's own parts, following it live by calling tools through the host (it has no
 * network of its own: its CSP allows none).
 */

type ExecutionStatus = Answer<'/executions/{id}/status'> & { toolCalls: { name: string; label: string }[] };
type WorkflowRun = Answer<'/workflows/runs/{runId}'>;
type Downloaded = { artifact: Artifact; encoding: 'utf-8' | 'base64'; content: string };

/** How often a run that is still going is read again. */
const POLL_MS = 1000;

const app = new App({ name: 'workspace-skills-run-view', version: '1.0.0' });
const root = document.getElementById('app')!;

/** A tool error's envelope (`{"error": {code, message, details}}`) as the ApiError the console's parts show. */
function failureOf(result: CallToolResult): ApiError {
  const text = result.content.find((c) => c.type === 'text')?.text ?? '';
  try {
    const { error } = JSON.parse(text) as { error: { code: string; message: string; details?: Record<string, unknown> } };
    return new ApiError(0, error.code, error.message, error.details);
  } catch {
    return new ApiError(0, 'ERROR', text || 'The tool failed.');
  }
}

/** A tool called through the host: its structured answer, or its error thrown as an ApiError. */
async function tool<T>(name: string, args: Record<string, unknown>): Promise<T> {
  const result = await app.callServerTool({ name, arguments: args });
  if (result.isError) throw failureOf(result);
  return result.structuredContent as T;
}

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Whatever the view shows now stops following its run when another takes its place. */
let shown = 0;

/** The run's files through the host: listed with list-artifacts, read with download-artifact, saved by the host (ui/download-file). */
const hostArtifacts: ArtifactSource = {
  list: async (executionId) => (await tool<Answer<'/artifacts'>>('list-artifacts', { executionId, limit: 100 })).data,
  bytes: async (artifact) => {
    const { encoding, content } = await tool<Downloaded>('download-artifact', { artifactId: artifact.id });
    return new Blob([encoding === 'base64' ? Uint8Array.from(atob(content), (c) => c.charCodeAt(0)) : content], { type: artifact.contentType });
  },
  download: async (artifact) => {
    const { encoding, content } = await tool<Downloaded>('download-artifact', { artifactId: artifact.id });
    // Hosts name the saved file after the URI's last segment, as the extension's examples do (file:///export.json).
    const uri = `file:///${encodeURIComponent(artifact.name)}`;
    const resource = { uri, mimeType: artifact.contentType, ...(encoding === 'base64' ? { blob: content } : { text: content }) };
    const saved = await app.downloadFile({ contents: [{ type: 'resource', resource }] });
    if (saved.isError) throw new ApiError(0, 'ERROR', `${artifact.name} was not saved.`);
  },
};

/**
 * A skill run: its answer growing in Output as get-execution-status reads it (each poll asks
 * only for the blocks from the last one on), its tool calls as they are made, its status, cost
 * and time, and its files once it stops.
 */
async function showExecution(executionId: string) {
  const mine = ++shown;
  const first = await tool<ExecutionStatus>('get-execution-status', { executionId });
  const heading = h('h1', {}, first.skillName);
  const statusText = h('span', { role: 'status' });
  const cost = h('span');
  const time = h('span');
  const output = outputRegion();
  const files = artifactsSection(executionId, hostArtifacts);
  const notice = h('div');
  show(
    root,
    heading,
    h('dl', { class: 'facts' }, h('dt', {}, 'Status'), h('dd', {}, statusText), h('dt', {}, 'Cost'), h('dd', {}, cost), h('dt', {}, 'Time'), h('dd', {}, time)),
    output.element,
    notice,
    files.element,
  );

  const drawn: string[] = [];
  let toolCalls = 0;
  const draw = (status: ExecutionStatus, from: number) => {
    status.outputBlocks.forEach((block, i) => {
      const at = from + i;
      // A block after the last one drawn is a new turn: the answer before it is whole.
      if (at >= drawn.length && drawn.length) output.finishAnswer();
      const before = drawn[at] ?? '';
      if (block.text.length > before.length && block.text.startsWith(before)) output.drawPart({ kind: 'text', text: block.text.slice(before.length) });
      drawn[at] = block.text;
    });
    for (const call of status.toolCalls.slice(toolCalls))
      output.drawPart({ kind: 'tool', text: call.label || call.name, detail: JSON.stringify(call, null, 2) });
    toolCalls = status.toolCalls.length;
    show(statusText, statusBadge(status.status));
    cost.textContent = `${status.cost} credits`;
    time.textContent = `${(status.executionTime / 1000).toFixed(1)} s`;
  };

  draw(first, 0);
  void files.refresh();
  let status = first;
  while (status.status === 'working') {
    await wait(POLL_MS);
    if (mine !== shown) return;
    const from = Math.max(drawn.length - 1, 0);
    try {
      status = await tool<ExecutionStatus>('get-execution-status', { executionId, blocksAfter: from });
    } catch (error) {
      return show(notice, alertBox(error instanceof ApiError ? error.message : 'The run could not be read.'));
    }
    draw(status, from);
  }
  output.finishAnswer();
  await files.refresh();
}

/** The workflow's steps, from its definition as the workflow:// resource reads it through the host; none if it cannot be read. */
async function graphOf(workflowId: string): Promise<Entry[]> {
  try {
    const { contents } = await app.readServerResource({ uri: `workflow://${encodeURIComponent(workflowId)}` });
    const definition = contents[0] && 'text' in contents[0] ? contents[0].text : '{}';
    return (JSON.parse(definition) as { graph?: Entry[] }).graph ?? [];
  } catch {
    return [];
  }
}

/**
 * A workflow run: the console's run panel acting through tools (resume-workflow-run,
 * cancel-workflow-run), read again with get-workflow-run while it runs.
 */
async function showWorkflowRun(runId: string) {
  const mine = ++shown;
  const { run } = await tool<WorkflowRun>('get-workflow-run', { runId });
  const graph = await graphOf(run.workflowId);
  let following = false;
  const follow = async () => {
    if (following) return;
    following = true;
    try {
      while (mine === shown && !panel.finished() && panel.status() !== 'suspended') {
        await wait(POLL_MS);
        const { run: next } = await tool<WorkflowRun>('get-workflow-run', { runId });
        if (mine === shown) panel.update({ snapshot: next.snapshot, status: next.status });
      }
    } catch (error) {
      panel.fail(error instanceof ApiError ? error.message : 'The run could not be read.');
    } finally {
      following = false;
    }
  };
  const panel = workflowRunPanel(graph, run, {
    resume: async (stepId, resumeData) => {
      await tool('resume-workflow-run', { runId, stepId, resumeData });
      // The panel marks the run running once this resolves; follow it from the next turn on.
      setTimeout(() => void follow());
    },
    cancel: async () => void (await tool('cancel-workflow-run', { runId })),
    runLink: (stepId, executionId) => h('button', { type: 'button', onclick: () => void showExecution(executionId) }, `Open the run of ${stepId}`),
  });
  show(root, h('h1', {}, `${run.workflowId} run`), ...panel.elements);
  await follow();
}

/** Draws the run a tool result names: a workflow run (runId, or run.runId) or a skill run (executionId). */
async function showResult(result: CallToolResult) {
  if (result.isError) return show(root, alertBox(failureOf(result).message));
  const answer = (result.structuredContent ?? {}) as { runId?: string; run?: { runId?: string }; executionId?: string };
  const runId = answer.runId ?? answer.run?.runId;
  try {
    if (runId) await showWorkflowRun(runId);
    else if (answer.executionId) await showExecution(answer.executionId);
    else show(root, alertBox('This result names no run to show.'));
  } catch (error) {
    show(root, alertBox(error instanceof ApiError ? error.message : 'The run could not be shown.'));
  }
}

const applyTheme = (context: McpUiHostContext | undefined) => context?.theme && applyDocumentTheme(context.theme);

app.ontoolresult = (result) => void showResult(result);
app.onhostcontextchanged = applyTheme;
void app.connect().then(() => applyTheme(app.getHostContext()));
