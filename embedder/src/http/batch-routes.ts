/**
 * The Batch API's place in the app: its handlers (or, when the API is off, handlers that answer
 * 404 for every one of its operations) and the multipart parser that hands an upload's body to its handler as a stream.
 */
import type { FastifyInstance, RouteHandlerMethod } from 'fastify';
import { ProblemError } from '../../../openapi/problems.js';
import type { Batches } from '../batch/batches.js';
import type { BatchFiles } from '../batch/files.js';
import type { FileLimits } from '../batch/jsonl.js';
import { batchHandlers } from './handlers/batches.js';
import { fileHandlers } from './handlers/files.js';

/** What the Batch API's routes need. */
export interface BatchApi {
  readonly files: BatchFiles;
  readonly batches: Batches;
  readonly limits: FileLimits;
}

const OPERATIONS = [
  'createFile',
  'listFiles',
  'retrieveFile',
  'downloadFile',
  'deleteFile',
  'createBatch',
  'listBatches',
  'retrieveBatch',
  'cancelBatch',
];

/** Registers the multipart parser and returns the handlers (the document's security asks for the grant). */
export function batchRoutes(app: FastifyInstance, api: BatchApi | undefined): { handlers: Record<string, RouteHandlerMethod> } {
  // The body is left unread here: the upload handler streams it (http/multipart.ts).
  app.addContentTypeParser('multipart/form-data', (_request, _payload, done) => done(null, undefined));
  if (!api) {
    const off: RouteHandlerMethod = async () => {
      throw new ProblemError('not_found', 'The Batch API is not enabled on this gateway.');
    };
    return { handlers: Object.fromEntries(OPERATIONS.map((id) => [id, off])) };
  }
  return { handlers: { ...fileHandlers(api.files, api.limits), ...batchHandlers(api.batches) } };
}
