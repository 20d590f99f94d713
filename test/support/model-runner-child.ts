/**
 * A program that starts the embedder's model runner the way the embedder does (main thread,
 * model in a worker), embeds one row, closes, and prints {"length": <vector length>}.
 * Tests run it as a child process when they need a fresh process environment.
 * Usage: node --import tsx test/support/model-runner-child.ts <model dir>
 */
import { readManifest } from '../../contract/model-manifest.js';
import { startModelRunner } from '../../embedder/src/model/runner.js';

const dir = process.argv[2];
if (!dir) throw new Error('usage: model-runner-child.ts <model dir>');
const runner = startModelRunner({ modelDir: dir, threads: 1, manifest: readManifest(dir), outDimensions: 1024 });
await runner.loaded;
const [vector] = await runner.embedRows([[101, 2000, 102]]);
await runner.close();
process.stdout.write(`${JSON.stringify({ length: vector?.length })}\n`);
