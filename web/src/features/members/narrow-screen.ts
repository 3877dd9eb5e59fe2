import { useSyncExternalStore } from 'react';

/** Below this width a sidebar covers the page (workspace.css): it is then a modal dialog. */
export const NARROW_SCREEN = '(max-width: 760px)';

function query(): MediaQueryList | null {
  return typeof window !== 'undefined' && typeof window.matchMedia === 'function'
    ? window.matchMedia(NARROW_SCREEN)
    : null;
}

export function narrowScreen(): boolean {
  return query()?.matches ?? false;
}

function subscribe(onChange: () => void): () => void {
  const list = query();
  if (!list) return () => {};
  list.addEventListener('change', onChange);
  return () => list.removeEventListener('change', onChange);
}

/** Whether the screen is narrow, following rotations and window resizes. */
export function useNarrowScreen(): boolean {
  return useSyncExternalStore(subscribe, narrowScreen, () => false);
}
