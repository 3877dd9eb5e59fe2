import { useEffect, useRef, useState, type ReactNode } from 'react';
import { Mark, type MarkDef } from './figures';
import type { Sort } from './url-state';

export type { Sort };

export type Column<T> = {
  key: string;
  label: string;
  /** A mark after the label (a figure not final yet), with what it says for screen readers. */
  mark?: MarkDef;
  /** What the column sorts by; rows without a value (null) come last either way. */
  value: (row: T) => number | string | null;
  render?: (row: T) => ReactNode;
  numeric?: boolean;
  /** How many columns this row's cell spans (the next ones are not drawn for it): one unless said. */
  span?: (row: T) => number;
};

/** Rows in the column's order: numbers largest first when descending, text from A; nulls last. */
export function sortRows<T>(rows: T[], column: Column<T> | undefined, descending: boolean): T[] {
  if (!column) return rows;
  return [...rows].sort((a, b) => {
    const [x, y] = [column.value(a), column.value(b)];
    if (x === null || y === null) return x === y ? 0 : x === null ? 1 : -1;
    const order = typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y));
    return descending ? -order : order;
  });
}

/**
 * Whether the table is wider than its frame, and whether columns are hidden to the left or the
 * right: the frame draws a shadow on the side that has more.
 */
export function useOverflow() {
  const scroller = useRef<HTMLDivElement>(null);
  const [edges, setEdges] = useState({ left: false, right: false });
  useEffect(() => {
    const element = scroller.current;
    if (!element) return undefined;
    const update = () => {
      const max = element.scrollWidth - element.clientWidth;
      const left = max > 1 && element.scrollLeft > 1;
      const right = max > 1 && element.scrollLeft < max - 1;
      setEdges((current) => (current.left === left && current.right === right ? current : { left, right }));
    };
    update();
    element.addEventListener('scroll', update, { passive: true });
    const observer = typeof ResizeObserver === 'undefined' ? undefined : new ResizeObserver(update);
    observer?.observe(element);
    if (element.firstElementChild) observer?.observe(element.firstElementChild);
    return () => {
      element.removeEventListener('scroll', update);
      observer?.disconnect();
    };
  }, []);
  return { scroller, edges };
}

/**
 * A table whose column headers sort it (a second click reverses the order). Numbers sort largest
 * first, text from A. It scrolls sideways inside its frame when wider than the card, its first
 * column staying in view, with a shadow on the side that has more. `pageSize` shows it a page at
 * a time, with Previous and Next.
 */
export function SortableTable<T>({
  caption,
  label,
  columns,
  rows,
  rowKey,
  initialSort,
  sort: controlledSort,
  onSort,
  pageSize,
  page = 1,
  onPage,
  empty,
}: {
  caption: ReactNode;
  /** The scrolling frame's name (a short one: the caption says the rest). */
  label: string;
  columns: Column<T>[];
  rows: T[];
  rowKey: (row: T) => string;
  initialSort?: Sort;
  /** The order, when the page keeps it (in the address): `onSort` is told each new one. */
  sort?: Sort;
  onSort?: (sort: Sort) => void;
  pageSize?: number;
  /** The page shown, from 1 (with `pageSize`); `onPage` is told each new one. */
  page?: number;
  onPage?: (page: number) => void;
  empty: string;
}) {
  const [ownSort, setOwnSort] = useState<Sort | undefined>(initialSort);
  const sort = onSort ? controlledSort : ownSort;
  const column = columns.find((candidate) => candidate.key === sort?.key);
  const sorted = sortRows(rows, column, sort?.descending ?? false);
  const pages = pageSize ? Math.max(1, Math.ceil(sorted.length / pageSize)) : 1;
  const shownPage = Math.min(Math.max(page, 1), pages);
  const first = pageSize ? (shownPage - 1) * pageSize : 0;
  const shown = pageSize ? sorted.slice(first, first + pageSize) : sorted;
  const { scroller, edges } = useOverflow();

  /** Another page: its first rows in view when the table's top had scrolled away (Next is at its foot). */
  function turn(next: number) {
    onPage?.(next);
    const frame = scroller.current?.parentElement;
    if (frame && frame.getBoundingClientRect().top < 0) frame.scrollIntoView?.({ block: 'start' });
  }

  function sortBy(next: Column<T>) {
    const order =
      sort?.key === next.key
        ? { key: next.key, descending: !sort.descending }
        : { key: next.key, descending: next.numeric === true };
    if (onSort) onSort(order);
    else setOwnSort(order);
  }

  function cells(row: T) {
    const drawn: ReactNode[] = [];
    for (let index = 0; index < columns.length; index += 1) {
      const candidate = columns[index];
      const content = candidate.render ? candidate.render(row) : candidate.value(row);
      if (index === 0) {
        drawn.push(
          <th key={candidate.key} scope="row">
            {content}
          </th>,
        );
        continue;
      }
      const span = Math.min(candidate.span?.(row) ?? 1, columns.length - index);
      drawn.push(
        <td
          key={candidate.key}
          colSpan={span > 1 ? span : undefined}
          className={candidate.numeric && span === 1 ? 'admin-table__num' : undefined}
        >
          {content}
        </td>,
      );
      index += span - 1;
    }
    return drawn;
  }

  return (
    <>
      <div
        className="admin-table__frame"
        data-more-left={edges.left ? 'true' : undefined}
        data-more-right={edges.right ? 'true' : undefined}
      >
        {/* Focusable so that a keyboard scrolls it; named so that a screen reader says what it is. */}
        <div ref={scroller} className="admin-table__scroll" role="region" aria-label={label} tabIndex={0}>
          <table className="admin-table">
            <caption className="admin-table__caption">{caption}</caption>
            <thead>
              <tr>
                {columns.map((candidate) => {
                  const active = sort?.key === candidate.key;
                  const ariaSort = active ? (sort?.descending ? 'descending' : 'ascending') : 'none';
                  return (
                    <th
                      key={candidate.key}
                      scope="col"
                      aria-sort={ariaSort}
                      className={candidate.numeric ? 'admin-table__num' : undefined}
                    >
                      <button type="button" className="admin-table__sort" onClick={() => sortBy(candidate)}>
                        {candidate.label}
                        {candidate.mark && <Mark {...candidate.mark} />}
                        <span aria-hidden="true" className="admin-table__arrow">
                          {active ? (sort?.descending ? '▼' : '▲') : ''}
                        </span>
                      </button>
                    </th>
                  );
                })}
              </tr>
            </thead>
            <tbody>
              {shown.length === 0 ? (
                <tr>
                  <td colSpan={columns.length} className="admin-table__empty">
                    {empty}
                  </td>
                </tr>
              ) : (
                shown.map((row) => <tr key={rowKey(row)}>{cells(row)}</tr>)
              )}
            </tbody>
          </table>
        </div>
      </div>
      {(edges.left || edges.right) && (
        <p className="admin-table__hint" aria-hidden="true">
          Scroll sideways for more columns.
        </p>
      )}
      {pageSize !== undefined && pages > 1 && (
        <nav className="admin-pager" aria-label={`${label}: pages`}>
          <p className="admin-pager__count">
            Rows {first + 1}–{first + shown.length} of {sorted.length}
          </p>
          <button
            type="button"
            className="btn btn--secondary admin-pager__button"
            disabled={shownPage <= 1}
            onClick={() => turn(shownPage - 1)}
          >
            Previous
          </button>
          <button
            type="button"
            className="btn btn--secondary admin-pager__button"
            disabled={shownPage >= pages}
            onClick={() => turn(shownPage + 1)}
          >
            Next
          </button>
        </nav>
      )}
    </>
  );
}
