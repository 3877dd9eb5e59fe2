import { useEffect, useId, useRef, useState } from 'react';
import type uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { Row } from './api';
import { addDays, daysIn, formatCount, formatDay } from './format';

/** Each small chart's height in CSS pixels (the last one adds the days under it). */
const HEIGHT = 104;
const AXIS_HEIGHT = 30;
/** The y axis's width: the same in every chart, so that their days line up. */
const Y_AXIS = 52;
const DAY_SECONDS = 86_400;
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/**
 * The measures the chart draws from each day's figures, one small chart each: visitors run in
 * hundreds where payments run in ones, and on a shared scale the payments were a flat line.
 */
const SERIES = [
  { label: 'Visitors', value: (row: Row) => row.visitors, stroke: '#1f5fbf' },
  { label: 'Checkouts', value: (row: Row) => row.checkout, stroke: '#a0520a' },
  { label: 'Trials', value: (row: Row) => row.trial, stroke: '#0f7b6c' },
  { label: 'Paid', value: (row: Row) => row.paid, stroke: '#6d28d9' },
] as const;
const PAID = 3;

/** Every day of the range, with the figures of those that had any (uPlot wants aligned arrays). */
export function alignedDays(from: string, to: string, rows: Row[]): uPlot.AlignedData {
  const byDay = new Map(rows.map((row) => [row.key, row]));
  const xs: number[] = [];
  const ys: number[][] = SERIES.map(() => []);
  const end = Date.parse(`${to}T00:00:00Z`);
  for (let day = Date.parse(`${from}T00:00:00Z`); day <= end; day += DAY_SECONDS * 1000) {
    xs.push(day / 1000);
    const row = byDay.get(new Date(day).toISOString().slice(0, 10));
    SERIES.forEach((series, index) => ys[index].push(row ? series.value(row) : 0));
  }
  return [xs, ...ys];
}

function keyOf(seconds: number): string {
  return new Date(seconds * 1000).toISOString().slice(0, 10);
}

/**
 * Where the day axis has its ticks, for a range and the pixels it has: days for a month or less
 * (every day, or every 2, 3 or 7 when they would crowd), Mondays up to half a year, else the
 * 1st of months. Seconds since 1970 (UTC days), with the unit their labels show.
 */
export function dayTicks(from: string, to: string, width: number): { ticks: number[]; unit: 'day' | 'week' | 'month' } {
  const days = daysIn(from, to);
  const room = Math.max(2, Math.floor(width / 64));
  const seconds = (key: string) => Date.parse(`${key}T00:00:00Z`) / 1000;
  const every = (first: string, step: number) => {
    const ticks: number[] = [];
    for (let day = first; day <= to; day = addDays(day, step)) ticks.push(seconds(day));
    return ticks;
  };
  const monday = () => {
    const weekday = new Date(`${from}T00:00:00Z`).getUTCDay();
    return addDays(from, (8 - weekday) % 7);
  };
  if (days <= 31) {
    const step = [1, 2, 3].find((candidate) => Math.ceil(days / candidate) <= room);
    return step ? { ticks: every(from, step), unit: 'day' } : { ticks: every(monday(), 7), unit: 'day' };
  }
  if (days <= 184) {
    const weeks = Math.ceil(days / 7);
    const step = [1, 2, 4].find((candidate) => Math.ceil(weeks / candidate) <= room) ?? 4;
    return { ticks: every(monday(), step * 7), unit: 'week' };
  }
  const months = Math.ceil(days / 30);
  const step = [1, 2, 3, 6, 12].find((candidate) => Math.ceil(months / candidate) <= room) ?? 12;
  const ticks: number[] = [];
  const start = new Date(`${from}T00:00:00Z`);
  for (let month = start.getUTCDate() === 1 ? 0 : 1; ; month += step) {
    const day = new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + month, 1)).toISOString().slice(0, 10);
    if (day > to) break;
    ticks.push(seconds(day));
  }
  return { ticks, unit: 'month' };
}

/** A tick's label: "20 Nov" for days and weeks (a week by its Monday), "Nov 2026" for months. */
export function tickLabel(seconds: number, unit: 'day' | 'week' | 'month'): string {
  const date = new Date(seconds * 1000);
  return unit === 'month'
    ? `${MONTHS[date.getUTCMonth()]} ${date.getUTCFullYear()}`
    : `${date.getUTCDate()} ${MONTHS[date.getUTCMonth()]}`;
}

/** Counts' ticks are whole numbers. */
const COUNT_STEPS = [
  1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1_000, 2_000, 2_500, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000,
  500_000, 1_000_000,
];

/**
 * Visitors, checkouts, trials and first payments per day over the range: one small chart each on
 * its own scale, the days lined up (uPlot, drawn on canvases that follow the card's width). A
 * pointer or a finger on a chart shows that day's four figures above them; the days whose first
 * payments are not final yet (`pendingFrom` on) are shaded on the Paid chart.
 */
export function DailyChart({
  from,
  to,
  rows,
  label,
  pendingFrom,
}: {
  from: string;
  to: string;
  rows: Row[];
  label: string;
  pendingFrom?: string | null;
}) {
  const holders = useRef<(HTMLDivElement | null)[]>([]);
  const syncKey = useId();
  /** The day the pointer is on (its index in the range), or null: the range's totals. */
  const [day, setDay] = useState<number | null>(null);
  const data = alignedDays(from, to, rows);
  const totals = data.slice(1).map((values) => (values as number[]).reduce((sum, value) => sum + value, 0));
  const pending = pendingFrom && pendingFrom <= to ? (pendingFrom < from ? from : pendingFrom) : null;

  useEffect(() => {
    const elements = holders.current.filter((element): element is HTMLDivElement => element !== null);
    if (elements.length !== SERIES.length) return undefined;
    const charts: uPlot[] = [];
    const cleanups: (() => void)[] = [];
    let cancelled = false;
    const aligned = alignedDays(from, to, rows);
    const xs = aligned[0] as number[];
    import('uplot')
      .then(({ default: UPlot }) => {
        if (cancelled) return;
        const widthOf = (element: HTMLElement) => Math.max(element.clientWidth, 260);
        SERIES.forEach((series, index) => {
          const element = elements[index];
          const last = index === SERIES.length - 1;
          const band = index === PAID && pending ? Date.parse(`${pending}T00:00:00Z`) / 1000 : null;
          const options: uPlot.Options = {
            width: widthOf(element),
            height: HEIGHT + (last ? AXIS_HEIGHT : 8),
            series: [
              {},
              {
                label: series.label,
                stroke: series.stroke,
                fill: `${series.stroke}1f`,
                width: 2,
                points: { show: xs.length <= 45, size: 5 },
              },
            ],
            scales: {
              x: { time: false, range: () => [xs[0] - DAY_SECONDS / 2, xs[xs.length - 1] + DAY_SECONDS / 2] },
              y: { range: (_chart, _min, max) => [0, UPlot.rangeNum(0, Math.max(max, 1), 0.1, true)[1]] },
            },
            axes: [
              {
                size: last ? AXIS_HEIGHT : 8,
                splits: (chart) => dayTicks(from, to, chart.width - Y_AXIS).ticks,
                values: (chart, splits) => {
                  const { unit } = dayTicks(from, to, chart.width - Y_AXIS);
                  return splits.map((split) => (last ? tickLabel(split, unit) : ''));
                },
                ticks: { show: last, size: 4 },
                stroke: '#4a5668',
                grid: { stroke: '#e3e8ef', width: 1 },
              },
              {
                size: Y_AXIS,
                incrs: COUNT_STEPS,
                values: (_chart, splits) => splits.map((split) => formatCount(split)),
                stroke: '#4a5668',
                grid: { stroke: '#e3e8ef', width: 1 },
              },
            ],
            legend: { show: false },
            cursor: {
              y: false,
              drag: { x: false, y: false, setScale: false },
              sync: { key: syncKey },
            },
            hooks: {
              setCursor: [
                (chart) => {
                  if (index === 0) setDay(chart.cursor.idx ?? null);
                },
              ],
              drawAxes: [
                (chart) => {
                  if (band === null) return;
                  // The days not final yet: a shaded band from the first of them to the end.
                  const { ctx, bbox } = chart;
                  const left = Math.max(chart.valToPos(band - DAY_SECONDS / 2, 'x', true), bbox.left);
                  ctx.save();
                  ctx.fillStyle = 'rgba(74, 86, 104, 0.14)';
                  ctx.fillRect(left, bbox.top, bbox.left + bbox.width - left, bbox.height);
                  ctx.strokeStyle = '#4a5668';
                  ctx.setLineDash([4 * UPlot.pxRatio, 3 * UPlot.pxRatio]);
                  ctx.lineWidth = UPlot.pxRatio;
                  ctx.beginPath();
                  ctx.moveTo(left, bbox.top);
                  ctx.lineTo(left, bbox.top + bbox.height);
                  ctx.stroke();
                  ctx.restore();
                },
              ],
            },
          };
          const chart = new UPlot(options, [xs, aligned[index + 1]], element);
          charts.push(chart);
          // A finger shows the day it is on, as a pointer does (uPlot follows the mouse only);
          // the page still scrolls up and down under it (touch-action: pan-y).
          const touch = (event: TouchEvent) => {
            const point = event.touches[0];
            if (!point) return;
            const area = chart.over.getBoundingClientRect();
            const at = { left: point.clientX - area.left, top: point.clientY - area.top };
            // The charts' plots are as wide as each other: the same spot is the same day in each.
            charts.forEach((each) => each.setCursor(at, true));
          };
          chart.over.addEventListener('touchstart', touch, { passive: true });
          chart.over.addEventListener('touchmove', touch, { passive: true });
          cleanups.push(() => {
            chart.over.removeEventListener('touchstart', touch);
            chart.over.removeEventListener('touchmove', touch);
          });
          if (typeof ResizeObserver !== 'undefined') {
            const observer = new ResizeObserver(() => {
              chart.setSize({ width: widthOf(element), height: chart.height });
            });
            observer.observe(element);
            cleanups.push(() => observer.disconnect());
          }
        });
      })
      .catch(() => {
        // Without a canvas (an old browser, a test) the figures above and the day table say the same.
      });
    return () => {
      cancelled = true;
      cleanups.forEach((cleanup) => cleanup());
      charts.forEach((chart) => chart.destroy());
      setDay(null);
    };
  }, [from, to, rows, pending, syncKey]);

  const xs = data[0] as number[];
  const shown = day !== null && day >= 0 && day < xs.length ? day : null;
  const shownKey = shown === null ? null : keyOf(xs[shown]);
  const notFinal = (index: number) => index === PAID && pending !== null && (shownKey === null || shownKey >= pending);
  return (
    <figure className="admin-chart">
      <p className="admin-chart__day">
        {shownKey === null ? `All ${formatCount(xs.length)} days (point at a day to see its figures)` : formatDay(shownKey)}
      </p>
      <div className="admin-chart__panels" role="img" aria-label={label}>
        {SERIES.map((series, index) => (
          <div key={series.label} className="admin-chart__panel">
            <p className="admin-chart__name" aria-hidden="true">
              <span className="admin-chart__swatch" style={{ background: series.stroke }} />
              {series.label}:{' '}
              <strong>{formatCount(shown === null ? totals[index] : (data[index + 1] as number[])[shown])}</strong>
              {notFinal(index) && <span className="admin-chart__pending"> (not final)</span>}
            </p>
            <div
              className="admin-chart__plot"
              ref={(element) => {
                holders.current[index] = element;
              }}
            />
          </div>
        ))}
      </div>
      {pending && (
        <figcaption className="admin-section__note">
          Shaded on the Paid chart: not final yet. Trials of visitors from {formatDay(pending)} on are not due yet.
        </figcaption>
      )}
    </figure>
  );
}
