/**
 * Writes the 200 body of POST /v1/embeddings. A float response of 1,000 vectors is ~20 MB of
 * JSON (~300 ms of stringify on this machine), so it is built vector by vector, yielding to the
 * event loop between slices; the result is `JSON.stringify` of the same object but for the float
 * values, written with nine significant digits at most (encoding.ts: vectorJson).
 */
import { trace } from '@opentelemetry/api';
import type { components } from '../../../openapi/generated/schema.js';
import { ONLINE_SLICING, type Slicing } from '../core/cpu-gate.js';
import { vectorJson, type EncodingFormat } from './encoding.js';

type EmbeddingResponse = components['schemas']['EmbeddingResponse'];

/** The response without its data: id, object, created, model, usage. */
export type ResponseHead = Omit<EmbeddingResponse, 'data'>;

/**
 * Renders the response JSON for `vectors` in input order (a "serialize" span when tracing is on),
 * pausing between slices as `slicing` says (a batch line's are the CPU gate's).
 */
export function renderEmbeddingResponse(
  head: ResponseHead,
  vectors: readonly Float32Array[],
  format: EncodingFormat,
  slicing: Slicing = ONLINE_SLICING,
): Promise<string> {
  // The global tracer: a no-op unless tracing.ts registered the SDK.
  return trace
    .getTracer('embedder')
    .startActiveSpan('serialize', { attributes: { 'embedder.vectors': vectors.length, 'embedder.encoding_format': format } }, (span) =>
      render(head, vectors, format, slicing).finally(() => span.end()),
    );
}

async function render(head: ResponseHead, vectors: readonly Float32Array[], format: EncodingFormat, slicing: Slicing): Promise<string> {
  const items: string[] = new Array<string>(vectors.length);
  let sliceStart = performance.now();
  for (let index = 0; index < vectors.length; index++) {
    const embedding = vectorJson(vectors[index]!, format);
    items[index] = `{"object":"embedding","index":${index},"embedding":${embedding}}`;
    if (performance.now() - sliceStart > slicing.ms) {
      await slicing.pause();
      sliceStart = performance.now();
    }
  }
  const { id, object, created, model, usage } = head;
  const prefix = JSON.stringify({ id, object, created, model }).slice(0, -1);
  return `${prefix},"data":[${items.join(',')}],"usage":${JSON.stringify(usage)}}`;
}
