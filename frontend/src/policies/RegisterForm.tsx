import { useState } from "react";

import { registerPolicy } from "../api/ops";
import type { PolicyVersion } from "../api/types";
import { FormPanel, useSubmit } from "../components/FormPanel";
import { HEURISTICS } from "./actions";

/** Register a built-in heuristic or a trained scorer's directory as a candidate (admins). */
export function RegisterForm({ onRegistered, onCancel }: {
  onRegistered: (version: PolicyVersion) => void;
  onCancel: () => void;
}) {
  const [name, setName] = useState("");
  const [version, setVersion] = useState("");
  const [kind, setKind] = useState<"heuristic" | "learned">("heuristic");
  const [heuristic, setHeuristic] = useState<string>(HEURISTICS[0]);
  const [artifactDir, setArtifactDir] = useState("");
  const state = useSubmit(
    () =>
      registerPolicy({
        name,
        version,
        ...(kind === "heuristic" ? { heuristic } : { artifact_dir: artifactDir }),
      }),
    onRegistered,
  );

  return (
    <FormPanel
      title="Register a policy version"
      submitLabel="Register"
      state={state}
      extra={
        <button type="button" className="button ghost" onClick={onCancel}>
          Cancel
        </button>
      }
    >
      <label className="field">
        <span>Name</span>
        <input value={name} onChange={(e) => setName(e.target.value)} required maxLength={100} />
      </label>
      <label className="field">
        <span>Version</span>
        <input value={version} onChange={(e) => setVersion(e.target.value)} required maxLength={100} />
      </label>
      <label className="field">
        <span>Kind</span>
        <select value={kind} onChange={(e) => setKind(e.target.value as "heuristic" | "learned")}>
          <option value="heuristic">Built-in</option>
          <option value="learned">Trained scorer (directory)</option>
        </select>
      </label>
      {kind === "heuristic" ? (
        <label className="field">
          <span>Heuristic</span>
          <select value={heuristic} onChange={(e) => setHeuristic(e.target.value)}>
            {HEURISTICS.map((h) => (
              <option key={h}>{h}</option>
            ))}
          </select>
        </label>
      ) : (
        <label className="field">
          <span>Artifact directory</span>
          <input value={artifactDir} onChange={(e) => setArtifactDir(e.target.value)} placeholder="var/artifacts/…" />
        </label>
      )}
    </FormPanel>
  );
}
