/**
 * Runs one README client snippet (Node) as written, then probes the objects it defined; the
 * Node twin of ../python/driver.py. Usage: node driver.mjs CLIENT SNIPPET_FILE, where the
 * snippet file is the README's code plus one `export { … }` line naming what the adapter uses.
 * Env: KEY, KEY_BAD, KEY_NOMODEL, KEY_LIMITED. Prints one JSON report.
 */
import { pathToFileURL } from 'node:url';
import { adapters } from './adapters.mjs';

const TEXT = 'Patient denies chest pain.';
const TOO_LONG = 'word '.repeat(600); // over 512 tokens: 400 invalid_request
const [client, snippetFile] = process.argv.slice(2);
const adapter = adapters[client];
let runs = 0;

/** Evaluates the snippet module afresh with `key` as KEY: { ns, printed, error }. */
async function runSnippet(key) {
  process.env.KEY = key;
  const printed = [];
  const log = console.log;
  console.log = (...args) => printed.push(args.join(' '));
  try {
    runs += 1; // a fresh URL is a fresh module evaluation
    return { ns: await import(`${pathToFileURL(snippetFile).href}?run=${runs}`), printed };
  } catch (error) {
    return { error, printed };
  } finally {
    console.log = log;
  }
}

function describe(error) {
  const cause = error?.cause ?? error?.lastError;
  return {
    class: error?.constructor?.name ?? String(error),
    status: error?.status ?? error?.statusCode ?? null,
    ...(cause && typeof cause === 'object' ? { wraps: cause.constructor?.name } : {}),
  };
}

async function errorOf(key, text = TEXT, tries = 1) {
  const { ns, error } = await runSnippet(key);
  if (error) return describe(error);
  for (let i = 0; i < tries; i += 1) {
    try {
      await adapter.noRetries(ns)([text]);
    } catch (err) {
      return describe(err);
    }
  }
  return { class: 'none' };
}

const started = Date.now();
const first = await runSnippet(process.env.KEY);
if (first.error) throw first.error;
const report = {
  printed: first.printed,
  document: Array.from(await adapter.document(first.ns, TEXT)),
  query: Array.from(await adapter.query(first.ns, TEXT)),
  ...(await adapter.extra(first.ns, TEXT)),
};
if (adapter.models) {
  // models.list() / models.retrieve(): with the working key, and with one whose organization lacks the model.
  report.models = {
    key: await adapter.models(first.ns, process.env.KEY),
    noModel: await adapter.models(first.ns, process.env.KEY_NOMODEL),
  };
}
const errors = {};
try {
  await adapter.noRetries(first.ns)([TOO_LONG]);
  errors['400'] = { class: 'none' };
} catch (err) {
  errors['400'] = describe(err);
}
errors['401'] = await errorOf(process.env.KEY_BAD);
errors['403'] = await errorOf(process.env.KEY_NOMODEL);
errors['429'] = await errorOf(process.env.KEY_LIMITED, TEXT, 8);
report.errors = errors;
report.seconds = Math.round((Date.now() - started) / 100) / 10;
process.stdout.write(`${JSON.stringify(report)}\n`);
