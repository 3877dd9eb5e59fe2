import { afterEach, vi } from 'vitest';
import { cleanup } from '@testing-library/react';
import { installDialogPolyfill } from './dialog-polyfill';
import { resetSubscriptionCheck } from '../lib/subscription';

installDialogPolyfill();

// jsdom does not implement scrolling; the router's scroll restoration calls it.
window.scrollTo = vi.fn<() => void>() as typeof window.scrollTo;

afterEach(() => {
  cleanup();
  window.localStorage.clear();
  window.sessionStorage.clear();
  resetSubscriptionCheck();
  vi.unstubAllGlobals();
  vi.restoreAllMocks();
});
