/**
 * Writes the 200 body of POST /v1/embeddings. A float response of 1,000 vectors is ~12 MB of
 * JSON, so it is built vector by vector, yielding to the event loop between slices, straight into
 * bytes (encoding.ts's ByteWriter: no string to copy, measure and encode again on the way out);
 * the bytes are the UTF-8 of `JSON.stringify` of the same object but for the float values,
 * written with nine significant digits at most (encoding.ts: writeVectorJson).
 */
import { trace } from '@opentelemetry/api';
import type { components } from '../../../openapi/generated/schema.js';
import { ONLINE_SLICING, type Slicing } from '../core/cpu-gate.js';
import { ByteWriter, writeVectorJson, type EncodingFormat } from './encoding.js';

type EmbeddingResponse = components['schemas']['EmbeddingResponse'];

/** The response without its data: id, object, created, model, usage. */
export type ResponseHead = Omit<EmbeddingResponse, 'data'>;

/**
 * Renders the response JSON for `vectors` in input order as UTF-8 bytes (a "serialize" span when
 * tracing is on), pausing between slices as `slicing` says (a batch line's are the CPU gate's).
 */
export function renderEmbeddingResponse(
  head: ResponseHead,
  vectors: readonly Float32Array[],
  format: EncodingFormat,
  slicing: Slicing = ONLINE_SLICING,
): Promise<Buffer> {
  // The global tracer: a no-op unless tracing.ts registered the SDK.
  return trace
    .getTracer('embedder')
    .startActiveSpan('serialize', { attributes: { 'embedder.vectors': vectors.length, 'embedder.encoding_format': format } }, (span) =>
      render(head, vectors, format, slicing).finally(() => span.end()),
    );
}

// Bytes a float vector usually takes per value ("-0.0" and nine digits or fewer, a comma); the
// writer grows past it when a response needs more.
const TYPICAL_BYTES_PER_VALUE = 13;

async function render(head: ResponseHead, vectors: readonly Float32Array[], format: EncodingFormat, slicing: Slicing): Promise<Buffer> {
  const { id, object, created, model, usage } = head;
  const perVector = (vectors[0]?.length ?? 0) * (format === 'base64' ? 6 : TYPICAL_BYTES_PER_VALUE) + 64;
  const out = new ByteWriter(vectors.length * perVector + 256);
  out.text(`${JSON.stringify({ id, object, created, model }).slice(0, -1)},"data":[`);
  let sliceStart = performance.now();
  for (let index = 0; index < vectors.length; index++) {
    out.text(`${index > 0 ? ',' : ''}{"object":"embedding","index":${index},"embedding":`);
    writeVectorJson(vectors[index]!, format, out);
    out.byte(125); // }
    if (performance.now() - sliceStart > slicing.ms) {
      await slicing.pause();
      sliceStart = performance.now();
    }
  }
  out.text(`],"usage":${JSON.stringify(usage)}}`);
  return out.bytes();
}
