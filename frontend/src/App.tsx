import { createBrowserRouter, RouterProvider } from "react-router";

import { SessionProvider } from "./auth/session";
import { Shell } from "./components/Shell";
import { LiveProvider } from "./live/context";
import ApiKeys from "./pages/ApiKeys";
import FleetOverview from "./pages/FleetOverview";
import DecisionPage from "./pages/DecisionPage";
import DecisionSearch from "./pages/DecisionSearch";
import FleetSeries from "./pages/FleetSeries";
import Inventory from "./pages/Inventory";
import LiveDecisions from "./pages/LiveDecisions";
import NodeDetail from "./pages/NodeDetail";
import NotFound from "./pages/NotFound";
import Policies from "./pages/Policies";
import SlosBreaches from "./pages/SlosBreaches";
import TrainingRuns from "./pages/TrainingRuns";
import Twin from "./pages/Twin";

// Every path here is also served index.html by Django's SPA view (console/web).
const router = createBrowserRouter([
  {
    element: <Shell />,
    children: [
      { index: true, element: <FleetOverview /> },
      { path: "nodes/:name", element: <NodeDetail /> },
      { path: "series", element: <FleetSeries /> },
      { path: "decisions", element: <LiveDecisions /> },
      { path: "decisions/search", element: <DecisionSearch /> },
      { path: "decisions/:id", element: <DecisionPage /> },
      { path: "slos", element: <SlosBreaches /> },
      { path: "policies", element: <Policies /> },
      { path: "training", element: <TrainingRuns /> },
      { path: "twin", element: <Twin /> },
      { path: "inventory/:kind?", element: <Inventory /> },
      { path: "keys", element: <ApiKeys /> },
      { path: "*", element: <NotFound /> },
    ],
  },
]);

export function App() {
  return (
    <SessionProvider>
      <LiveProvider>
        <RouterProvider router={router} />
      </LiveProvider>
    </SessionProvider>
  );
}
