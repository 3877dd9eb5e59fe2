// Answers and stored values are read field by field: the server (or an older page) may have sent
// anything, and a missing or odd field must not break the page.

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

/** The value's fields, or none when it is not an object. */
export function record(value: unknown): Record<string, unknown> {
  return isRecord(value) ? value : {};
}
