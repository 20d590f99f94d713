/**
 * The Files API (OpenAI's shapes, purpose `batch`): upload, list, retrieve, download, delete.
 * Every call carries authz's grant (checked before any body byte is read, grant.ts); the
 * organization it names scopes every lookup, so another organization's id is a 404.
 */
import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest, RouteHandlerMethod } from 'fastify';
import { JSON_CONTENT_TYPE, ProblemError } from '../../../../openapi/problems.js';
import type { BatchFiles } from '../../batch/files.js';
import type { FileLimits } from '../../batch/jsonl.js';
import { noteOutcome } from '../../telemetry/request-log.js';
import { readUploadForm } from '../multipart.js';
import { listQuery, orgOf, page } from './list-query.js';

/** Multipart framing and the small fields around the file part. */
const FORM_OVERHEAD_BYTES = 64 * 1024;

/** The Files API handlers by operationId. */
export function fileHandlers(files: BatchFiles, limits: FileLimits): Record<string, RouteHandlerMethod> {
  return {
    async createFile(request: FastifyRequest, reply: FastifyReply) {
      const org = orgOf(request);
      if (!/^multipart\/form-data/i.test(request.headers['content-type'] ?? '')) {
        throw new ProblemError('invalid_body', 'content-type: must be multipart/form-data');
      }
      // Refused on its headers when it says it is too large: nothing of it is read.
      const length = Number(request.headers['content-length'] ?? 0);
      if (length > limits.maxBytes + FORM_OVERHEAD_BYTES) {
        throw new ProblemError('payload_too_large', `file: must be at most ${limits.maxBytes} bytes`);
      }
      const form = await readUploadForm(request.raw, limits.maxBytes, (filename, chunks) => files.upload(org, filename, chunks));
      if (form.fields.purpose !== 'batch') {
        await files.delete(org, form.result.id).catch(() => undefined);
        throw new ProblemError('invalid_body', 'purpose: must be batch');
      }
      noteOutcome(request, { inputs: form.result.lines.reduce((a, b) => a + b, 0) });
      return reply.type(JSON_CONTENT_TYPE).send(files.view(form.result));
    },
    async listFiles(request: FastifyRequest, reply: FastifyReply) {
      const query = listQuery(request, 10_000);
      const purpose = (request.query as Record<string, unknown>).purpose;
      if (purpose !== undefined && purpose !== 'batch' && purpose !== 'batch_output') {
        throw new ProblemError('invalid_body', 'purpose: must be one of batch, batch_output');
      }
      const listed = await files.list(orgOf(request), { ...query, ...(typeof purpose === 'string' ? { purpose } : {}) });
      return reply.type(JSON_CONTENT_TYPE).send(
        page(
          listed.files.map((f) => files.view(f)),
          listed.hasMore,
        ),
      );
    },
    async retrieveFile(request: FastifyRequest, reply: FastifyReply) {
      const file = await files.get(orgOf(request), (request.params as { file_id: string }).file_id);
      return reply.type(JSON_CONTENT_TYPE).send(files.view(file));
    },
    async downloadFile(request: FastifyRequest, reply: FastifyReply) {
      const file = await files.get(orgOf(request), (request.params as { file_id: string }).file_id);
      return reply.type('application/octet-stream').send(Readable.from(files.content(file)));
    },
    async deleteFile(request: FastifyRequest, reply: FastifyReply) {
      const id = (request.params as { file_id: string }).file_id;
      await files.delete(orgOf(request), id);
      return reply.type(JSON_CONTENT_TYPE).send({ id, object: 'file', deleted: true });
    },
  };
}
