import { useCallback, useEffect, useLayoutEffect, useState, type RefObject } from 'react';
import { shouldStickSaveButton } from './sticky';

/**
 * Tracks whether the element's in-page position is far enough below the viewport that a sticky
 * copy should be shown. `watch` lists values that move the element (e.g. how many tiles are shown).
 */
export function useStickyBelowViewport(
  anchorRef: RefObject<HTMLElement | null>,
  enabled: boolean,
  watch: unknown,
): boolean {
  const [sticky, setSticky] = useState(false);

  const recompute = useCallback(() => {
    const anchor = anchorRef.current;
    if (!enabled || !anchor) {
      setSticky(false);
      return;
    }
    setSticky(shouldStickSaveButton(anchor.getBoundingClientRect().top, window.innerHeight));
  }, [anchorRef, enabled]);

  useLayoutEffect(recompute, [recompute, watch]);

  useEffect(() => {
    if (!enabled) return undefined;
    window.addEventListener('scroll', recompute, { passive: true });
    window.addEventListener('resize', recompute);
    return () => {
      window.removeEventListener('scroll', recompute);
      window.removeEventListener('resize', recompute);
    };
  }, [enabled, recompute]);

  return sticky;
}
