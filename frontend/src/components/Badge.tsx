/** A state pill: policy states, job statuses, breach statuses (colours in styles.css). */
export function Badge({ value, testId = "badge" }: { value: string; testId?: string }) {
  return (
    <span className={`badge state-${value}`} data-testid={testId}>
      {value}
    </span>
  );
}

export function ProgressBar({ value, label }: { value: number; label?: string }) {
  const percent = Math.round(Math.max(0, Math.min(1, value)) * 100);
  return (
    <span
      className="progress"
      role="progressbar"
      aria-valuenow={percent}
      aria-valuemin={0}
      aria-valuemax={100}
      aria-label={label ?? "Progress"}
    >
      <span className="progress-fill" style={{ width: `${percent}%` }} />
      <span className="progress-text">{percent}%</span>
    </span>
  );
}
