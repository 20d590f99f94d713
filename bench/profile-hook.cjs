// Loaded into a service by bench/profile.ts (NODE_OPTIONS=--require …): the first SIGUSR2 starts
// V8's CPU profiler on the main thread, the second stops it and writes
// $CTG_PROFILE_DIR/<pid>.cpuprofile, so a profile covers only the window the bench measures
// (not start-up, model loading or warm-up). Inert without CTG_PROFILE_DIR.
const dir = process.env.CTG_PROFILE_DIR;
if (dir) {
  const inspector = require('node:inspector');
  const { writeFileSync } = require('node:fs');
  const { join } = require('node:path');
  const session = new inspector.Session();
  session.connect();
  let running = false;
  process.on('SIGUSR2', () => {
    if (!running) {
      running = true;
      session.post('Profiler.enable', () => session.post('Profiler.start'));
      return;
    }
    running = false;
    session.post('Profiler.stop', (err, result) => {
      if (!err) writeFileSync(join(dir, `${process.pid}.cpuprofile`), JSON.stringify(result.profile));
    });
  });
}
