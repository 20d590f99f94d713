/**
 * The model alone, as the embedder runs it (its model workers, model/runner.ts): N sessions of T
 * ONNX Runtime threads each, every session running calls of `rows` copies of one text back to
 * back, side by side. Prints inputs per second, CPU per input (this process: the workers'
 * threads included) and one input's latency at idle. Why MODEL_SESSIONS defaults to one session
 * of one thread per core (embedder/README.md):
 *   npx tsx bench/sessions.ts --model-dir .local/models/default --layouts 1x2,2x1,1x2,2x1 --kind short --rows 16
 * `--busy 0.3` keeps 30 % of a core busy on the main thread meanwhile (as the event loop is).
 */
import { parseArgs } from 'node:util';
import { API_DIMENSIONS, readManifest } from '../contract/model-manifest.ts';
import { startModelRunner } from '../embedder/src/model/runner.ts';
import { bodyTexts } from './corpus.ts';
import { loadTokenizer, tokenize } from './model-inputs.ts';

const { values } = parseArgs({
  options: {
    'model-dir': { type: 'string', default: '.local/models/default' },
    layouts: { type: 'string', default: '1x2,2x1' },
    kind: { type: 'string', default: 'short' },
    rows: { type: 'string', default: '16' },
    seconds: { type: 'string', default: '8' },
    busy: { type: 'string', default: '0' },
  },
});
const modelDir = values['model-dir'] as string;
const manifest = readManifest(modelDir);
const kind = values.kind === 'note' ? 'note' : 'short';
const text = bodyTexts(kind, 1)[0]!;
const row = tokenize(loadTokenizer(modelDir), [text], manifest.maxTokens)[0]!;
const seconds = Number(values.seconds);
const busy = Number(values.busy);

/** Keeps `fraction` of this thread busy in 10 ms periods until `stop()`. */
function busyLoop(fraction: number): () => void {
  let stopped = false;
  const period = async () => {
    while (!stopped) {
      const start = performance.now();
      while (performance.now() - start < 10 * fraction);
      await new Promise((r) => setTimeout(r, 10 * (1 - fraction)));
    }
  };
  if (fraction > 0) void period();
  return () => (stopped = true);
}

async function measure(sessions: number, threads: number, rowsPerCall: number) {
  const runners = Array.from({ length: sessions }, () => startModelRunner({ modelDir, threads, manifest, outDimensions: API_DIMENSIONS }));
  try {
    await Promise.all(runners.map((r) => r.loaded));
    const rows = Array.from({ length: rowsPerCall }, () => row);
    for (const r of runners) for (let i = 0; i < 3; i++) await r.embedRows(rows); // warm-up
    const idleStart = performance.now();
    await runners[0]!.embedRows([row]);
    const idleMs = performance.now() - idleStart;
    const stop = busyLoop(busy);
    const cpu = process.cpuUsage();
    const start = performance.now();
    const counts = await Promise.all(
      runners.map(async (r) => {
        let n = 0;
        while (performance.now() - start < seconds * 1000) {
          await r.embedRows(rows);
          n += rows.length;
        }
        return n;
      }),
    );
    const elapsed = (performance.now() - start) / 1000;
    stop();
    const used = process.cpuUsage(cpu);
    const inputs = counts.reduce((a, b) => a + b, 0);
    return { inputsPerS: inputs / elapsed, cpuMsPerInput: (used.user + used.system) / 1000 / inputs, idleMs };
  } finally {
    await Promise.all(runners.map((r) => r.close()));
  }
}

for (const layout of (values.layouts as string).split(',')) {
  const [sessions, threads] = layout.split('x').map(Number) as [number, number];
  // Calls of `rows` inputs over all sessions: each session gets its share.
  const perCall = Math.max(1, Math.round(Number(values.rows) / sessions));
  const r = await measure(sessions, threads, perCall);
  console.log(
    `${sessions} session(s) × ${threads} thread(s), ${kind}, ${perCall} rows a call: ${r.inputsPerS.toFixed(r.inputsPerS < 10 ? 2 : 1)} inputs/s, ` +
      `${r.cpuMsPerInput.toFixed(2)} ms CPU per input (busy loop included), one input at idle ${r.idleMs.toFixed(1)} ms`,
  );
}
