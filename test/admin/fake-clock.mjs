// Preloaded into a child process (node --import) to set its clock back or forward by
// FAKE_CLOCK_OFFSET_MS, as a machine with a wrong clock would be: Date.now() and new Date()
// read the shifted time. Only tests load it.
const offset = Number(process.env.FAKE_CLOCK_OFFSET_MS ?? 0);
const RealDate = Date;
class ShiftedDate extends RealDate {
  constructor(...args) {
    if (args.length === 0) super(RealDate.now() + offset);
    else super(...args);
  }
  static now() {
    return RealDate.now() + offset;
  }
}
globalThis.Date = ShiftedDate;
