/**
 * Reading a `multipart/form-data` upload as a stream (POST /v1/files): the `file` part is handed
 * to the consumer chunk by chunk as it arrives (never buffered whole), the `purpose` field is
 * collected, and everything else is bounded: one file, a few small fields, no large headers.
 * Fields other than `purpose` are ignored (OpenAI's SDKs may send more), up to MAX_FORM_FIELDS;
 * a form past a bound is refused by name, never parsed in part (busboy would otherwise drop
 * the parts after its limit silently, and the file with them).
 * @fastify/busboy parses the framing (a well-kept parser, Fastify's own fork of busboy).
 */
import type { IncomingMessage } from 'node:http';
import { Busboy, type BusboyFileStream } from '@fastify/busboy';
import { ProblemError } from '../../../openapi/problems.js';

/** The form's fields and what the consumer made of its file part. */
export interface UploadForm<T> {
  readonly fields: Readonly<Record<string, string>>;
  readonly filename: string;
  readonly result: T;
}

const invalid = (detail: string) => new ProblemError('invalid_body', detail);

/** Form fields besides the file part (each name at most 64 bytes, each value at most 1 KiB). */
const MAX_FORM_FIELDS = 32;

/**
 * Parses `raw`'s multipart body; `consume` reads the `file` part (its filename given) as it
 * streams. Throws ProblemError for a body that is not such a form, and whatever `consume` throws.
 */
export function readUploadForm<T>(
  raw: IncomingMessage,
  maxFileBytes: number,
  consume: (filename: string, chunks: AsyncIterable<Buffer>) => Promise<T>,
): Promise<UploadForm<T>> {
  return new Promise((resolve, reject) => {
    let parser: InstanceType<typeof Busboy>;
    try {
      parser = new Busboy({
        headers: raw.headers as { 'content-type': string },
        limits: {
          files: 1,
          fields: MAX_FORM_FIELDS,
          parts: MAX_FORM_FIELDS + 1,
          fieldSize: 1024,
          fieldNameSize: 64,
          headerPairs: 16,
          fileSize: maxFileBytes + 1,
        },
      });
    } catch {
      reject(invalid('content-type: must be multipart/form-data with a boundary'));
      return;
    }
    const fields: Record<string, string> = {};
    let upload: Promise<{ filename: string; result: T }> | undefined;
    let failed = false;
    const fail = (error: unknown) => {
      if (failed) return;
      failed = true;
      raw.unpipe(parser);
      raw.resume();
      reject(error);
    };
    parser.on('field', (name: string, value: string, nameTruncated: boolean, valueTruncated: boolean) => {
      if (name === 'purpose' && (nameTruncated || valueTruncated)) fail(invalid('purpose: must be batch'));
      fields[name] = value;
    });
    const tooMany = () => fail(invalid(`body: at most ${MAX_FORM_FIELDS} form fields besides one part named file`));
    parser.on('fieldsLimit', tooMany);
    parser.on('partsLimit', tooMany);
    parser.on('filesLimit', () => fail(invalid('file: exactly one part named file is expected')));
    parser.on('file', (name: string, stream: BusboyFileStream, filename: string) => {
      if (name !== 'file' || upload) {
        stream.resume();
        fail(invalid('file: exactly one part named file is expected'));
        return;
      }
      upload = consume(filename ?? '', stream).then((result) => ({ filename: filename ?? '', result }));
      upload.catch((error: unknown) => {
        stream.resume();
        fail(error);
      });
    });
    parser.on('error', () => fail(invalid('body: must be a well-formed multipart/form-data body')));
    parser.on('finish', () => {
      if (!upload) return fail(invalid('file: is required'));
      upload.then((done) => {
        if (!failed) resolve({ fields, ...done });
      }, fail);
    });
    raw.on('error', () => fail(invalid('body: could not be read')));
    raw.pipe(parser);
  });
}
