import { useState, type ReactNode } from 'react';

export type Column<T> = {
  key: string;
  label: string;
  /** What the column sorts by. */
  value: (row: T) => number | string;
  render?: (row: T) => ReactNode;
  numeric?: boolean;
};

type Sort = { key: string; descending: boolean };

/**
 * A table whose column headers sort it (a second click reverses the order). Numbers sort largest
 * first, text from A.
 */
export function SortableTable<T>({
  caption,
  columns,
  rows,
  rowKey,
  initialSort,
  empty,
}: {
  caption: ReactNode;
  columns: Column<T>[];
  rows: T[];
  rowKey: (row: T) => string;
  initialSort?: Sort;
  empty: string;
}) {
  const [sort, setSort] = useState<Sort | undefined>(initialSort);
  const column = columns.find((candidate) => candidate.key === sort?.key);
  const sorted = column
    ? [...rows].sort((a, b) => {
        const [x, y] = [column.value(a), column.value(b)];
        const order = typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y));
        return sort?.descending ? -order : order;
      })
    : rows;

  function sortBy(next: Column<T>) {
    setSort((current) =>
      current?.key === next.key
        ? { key: next.key, descending: !current.descending }
        : { key: next.key, descending: next.numeric === true },
    );
  }

  return (
    <div className="admin-table__scroll">
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
          {sorted.length === 0 ? (
            <tr>
              <td colSpan={columns.length} className="admin-table__empty">
                {empty}
              </td>
            </tr>
          ) : (
            sorted.map((row) => (
              <tr key={rowKey(row)}>
                {columns.map((candidate, index) => {
                  const content = candidate.render ? candidate.render(row) : candidate.value(row);
                  return index === 0 ? (
                    <th key={candidate.key} scope="row">
                      {content}
                    </th>
                  ) : (
                    <td key={candidate.key} className={candidate.numeric ? 'admin-table__num' : undefined}>
                      {content}
                    </td>
                  );
                })}
              </tr>
            ))
          )}
        </tbody>
      </table>
    </div>
  );
}
