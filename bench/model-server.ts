/**
 * A model provider's API for the streams bench: Anthropic's Messages API (streaming, the
 * documented SSE events) on a loopback port, answering every request at once with `words` text
 * deltas and `end_turn`. Each event is its own write, as a hosted API sends them as they are
 * generated; nothing is waited for between them, so what a stream measures is the service.
 * It runs in a process of its own, so the bench's client, busy reading streams, never delays
 * an answer that a real provider would send from elsewhere.
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { fileURLToPath } from 'node:url';
import { freePort, untilAnswering } from './lib';

const event = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;

function serve(port: number, words: number) {
  createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(
        event('message_start', {
          message: { id: 'msg_bench', type: 'message', role: 'assistant', model: 'bench', content: [], usage: { input_tokens: 10, output_tokens: 0 } },
        }),
      );
      res.write(event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }));
      for (let i = 0; i < words; i++) res.write(event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: `word${i} ` } }));
      res.write(event('content_block_stop', { index: 0 }));
      res.write(event('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { output_tokens: words } }));
      res.end(event('message_stop', {}));
    });
  }).listen(port, '127.0.0.1');
}

const self = fileURLToPath(import.meta.url);

export async function startModelServer(words: number) {
  const port = await freePort();
  const child = spawn(process.execPath, ['node_modules/tsx/dist/cli.mjs', self, String(port), String(words)], { stdio: 'ignore' });
  const url = `http://127.0.0.1:${port}/v1/messages`;
  await untilAnswering(url, child, { method: 'POST', body: '{}' }, 10_000);
  return {
    url,
    /** The service's settings that send its runs here (`wrangler dev --var`). */
    vars: ['--var', 'ANTHROPIC_API_KEY:bench', '--var', `ANTHROPIC_BASE_URL:http://127.0.0.1:${port}`],
    stop: () => new Promise<void>((resolve) => (child.exitCode !== null ? resolve() : (child.once('exit', () => resolve()), child.kill()))),
  };
}

if (process.argv[1] === self) serve(Number(process.argv[2]), Number(process.argv[3]));
