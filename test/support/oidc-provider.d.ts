// The part of oidc-provider (a JavaScript package without types) that the sign-on test uses: a
// provider built from an issuer and a configuration, listening like an http.Server.
declare module 'oidc-provider' {
  import type { Server } from 'node:http';

  export default class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>);
    listen(port: number, host: string): Server;
  }
}
