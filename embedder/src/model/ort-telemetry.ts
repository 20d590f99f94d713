/**
 * ONNX Runtime 1.30's Linux build carries Microsoft's 1DS telemetry client, on by default:
 * at the first session it writes `mat-debug-<pid>.log` (the client's own debug log) and `.ses`
 * into the temp directory, keeps an event store and a device id under
 * `~/.cache/Microsoft/DeveloperTools/.onnxruntime/`, and periodically looks up its collector
 * host to upload them. The events describe the host and the model (file, graph and producer
 * names), never tensors, but a clinical service sends nothing anywhere it was not told to.
 * ORT reads `ORT_DISABLE_TELEMETRY` from the process environment when it creates its
 * environment (the first session), so it must be set on the main thread before the model
 * worker starts: a worker's `process.env` is a copy that native code never sees.
 */

/** Turns ONNX Runtime's telemetry off for this process; call on the main thread before any session. */
export function disableOrtTelemetry(env: NodeJS.ProcessEnv = process.env): void {
  env.ORT_DISABLE_TELEMETRY = '1';
}
