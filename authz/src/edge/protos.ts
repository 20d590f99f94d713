/**
 * Envoy's own protos, loaded once from the pinned @grpc/grpc-js-xds package (never copied by
 * hand) and the standard gRPC health protocol. The same options drive
 * `authz/scripts/generate-proto-types.ts`, so the generated types in `authz/generated` describe
 * exactly the objects proto-loader hands to the handlers.
 */
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadSync, type Options } from '@grpc/proto-loader';
import type { ProtoGrpcType as AuthProtos } from '../../generated/external_auth.js';
import type { ProtoGrpcType as HealthProtos } from '../../generated/health.js';
import { repoRoot } from '../../../contract/repo-root.js';

const xdsDeps = 'node_modules/@grpc/grpc-js-xds/deps';

/** Include directories, relative to the repository root. */
export const PROTO_INCLUDE_DIRS = [
  `${xdsDeps}/envoy-api`,
  `${xdsDeps}/xds`,
  `${xdsDeps}/googleapis`,
  `${xdsDeps}/protoc-gen-validate`,
  'authz/proto',
] as const;

/** The service definitions authz serves. */
export const PROTO_FILES = ['envoy/service/auth/v3/external_auth.proto', 'grpc/health/v1/health.proto'] as const;

// keepCase: field names as Envoy's docs and configs spell them (status_on_error, ok_response).
// longs as strings: Timestamp.seconds and byte counters never lose precision.
/** proto-loader options shared by the runtime loader and the type generator. */
export const LOADER_OPTIONS = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
} as const satisfies Options;

type Protos = AuthProtos & HealthProtos;
let loaded: Protos | undefined;

/** Returns the loaded gRPC package object, loading the protos on first use only. */
export function protos(): Protos {
  if (!loaded) {
    const definition = loadSync([...PROTO_FILES], {
      ...LOADER_OPTIONS,
      includeDirs: PROTO_INCLUDE_DIRS.map((dir) => join(repoRoot, dir)),
    });
    loaded = grpc.loadPackageDefinition(definition) as unknown as Protos;
  }
  return loaded;
}
