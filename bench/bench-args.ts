/** Command-line options shared by the bench scripts (they read no environment variables). */
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import type { TextKind } from './corpus.ts';

/** Options of a baseline run. */
export interface BaselineArgs {
  modelDir: string;
  kind: TextKind;
  batches: number[];
  seconds: number;
  threads: number;
  optLevel: 'disabled' | 'basic' | 'extended' | 'all';
  /** onnxruntime's intra-op spin-waiting (its default is on). */
  spin: boolean;
  /** 0: the 256-text corpus; N: the texts of an N-string request body (corpus.ts bodyTexts), repeated. */
  texts: number;
}

/** Parses `--model-dir --kind --batches 8,16 --seconds --threads --opt --spin --texts`. */
export function parseBaselineArgs(argv: string[]): BaselineArgs {
  const { values } = parseArgs({
    args: argv,
    options: {
      'model-dir': { type: 'string', default: '.local/models/test' },
      kind: { type: 'string', default: 'short' },
      batches: { type: 'string', default: '8,16,32,64' },
      seconds: { type: 'string', default: '4' },
      threads: { type: 'string', default: String(availableParallelism()) },
      opt: { type: 'string', default: 'all' },
      spin: { type: 'string', default: '1' },
      texts: { type: 'string', default: '0' },
    },
  });
  const kind = values.kind === 'note' ? 'note' : 'short';
  return {
    modelDir: values['model-dir'] as string,
    kind,
    batches: (values.batches as string)
      .split(',')
      .map(Number)
      .filter((n) => n > 0),
    seconds: Number(values.seconds),
    threads: Number(values.threads),
    optLevel: values.opt as BaselineArgs['optLevel'],
    spin: values.spin !== '0',
    texts: Number(values.texts),
  };
}

/** CPU ms (all threads of this process) per item of the last measureRate call. */
export let lastCpuMsPerItem = 0;

/** Runs `step` repeatedly for at least `seconds` (after one warm-up call); returns items/s. */
export async function measureRate(seconds: number, step: (i: number) => Promise<number>): Promise<number> {
  await step(0);
  let items = 0;
  let i = 1;
  const cpu = process.cpuUsage();
  const start = performance.now();
  while (performance.now() - start < seconds * 1000) items += await step(i++);
  const used = process.cpuUsage(cpu);
  lastCpuMsPerItem = (used.user + used.system) / 1000 / items;
  return items / ((performance.now() - start) / 1000);
}
