import { afterEach, vi } from 'vitest';
import { cleanup } from '@testing-library/react';
import { installDialogPolyfill } from './dialog-polyfill';

installDialogPolyfill();

// jsdom does not implement scrolling; the router's scroll restoration calls it.
window.scrollTo = vi.fn<() => void>() as typeof window.scrollTo;

afterEach(() => {
  cleanup();
  window.localStorage.clear();
  vi.unstubAllGlobals();
  vi.restoreAllMocks();
});
