/**
 * `input_type` from the body, else from the `x-input-type` header: many clients send only the
 * body fields they know (LangChain.js, Vercel ai, Haystack, chromadb, LanceDB) but can set a
 * default header per client. The schema already checked the header's value (query | document;
 * a header sent twice arrives joined, "query, query", and fails that check).
 */
import type { FastifyRequest } from 'fastify';

export type InputType = 'query' | 'document';

/** The request's input type: the body field wins over the header. */
export function inputTypeOf(bodyInputType: InputType | undefined, headers: FastifyRequest['headers']): InputType | undefined {
  if (bodyInputType !== undefined) return bodyInputType;
  const header = headers['x-input-type'];
  return header === 'query' || header === 'document' ? header : undefined;
}
