//! Every API method the simulator serves, one variant each, with its HTTP method and path
//! template exactly as the official schema spells them. The edge matches a request to a
//! `Route`; the model dispatches on it. [`Route::ALL`] are the methods the fleet uses (the
//! conformance tests walk them and the client has a typed call for each);
//! [`Route::TESTBED`] are served only for testbeds (reading one of PVE's HA resources, which
//! are set through `/_sim/ha/resources`, and the target side of a remote migration, which the
//! source simulator calls); [`Route::SERVED`] is both.

/// An HTTP method of the PVE API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HttpMethod {
    /// GET (parameters in the query string).
    Get,
    /// POST (parameters in the body, query merged).
    Post,
    /// PUT (parameters in the body, query merged).
    Put,
    /// DELETE (parameters in the query string).
    Delete,
}

impl HttpMethod {
    /// The method as the schema's `info` key spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Get => "GET",
            Self::Post => "POST",
            Self::Put => "PUT",
            Self::Delete => "DELETE",
        }
    }

    /// Parse `GET`/`POST`/`PUT`/`DELETE`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "GET" => Some(Self::Get),
            "POST" => Some(Self::Post),
            "PUT" => Some(Self::Put),
            "DELETE" => Some(Self::Delete),
            _ => None,
        }
    }
}

macro_rules! routes {
    (
        fleet { $($variant:ident => $method:ident $path:literal,)* }
        testbed { $($tvariant:ident => $tmethod:ident $tpath:literal,)* }
    ) => {
        /// One API method served by the simulator.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Route {
            $(
                #[doc = concat!(stringify!($method), " `", $path, "`")]
                $variant,
            )*
            $(
                #[doc = concat!(stringify!($tmethod), " `", $tpath, "` (testbeds only)")]
                $tvariant,
            )*
        }

        impl Route {
            /// The routes the fleet uses, in schema order
            /// (`schema/endpoints-9.1.json`).
            pub const ALL: &'static [Route] = &[$(Route::$variant,)*];

            /// The routes served only for testbeds (`schema/testbed-9.1.json`).
            pub const TESTBED: &'static [Route] = &[$(Route::$tvariant,)*];

            /// Every route the simulator serves: [`Route::ALL`] then [`Route::TESTBED`].
            pub const SERVED: &'static [Route] =
                &[$(Route::$variant,)* $(Route::$tvariant,)*];

            /// The HTTP method.
            pub fn method(self) -> HttpMethod {
                match self {
                    $(Route::$variant => HttpMethod::$method,)*
                    $(Route::$tvariant => HttpMethod::$tmethod,)*
                }
            }

            /// The path template with `{param}` placeholders, as in the schema.
            pub fn template(self) -> &'static str {
                match self {
                    $(Route::$variant => $path,)*
                    $(Route::$tvariant => $tpath,)*
                }
            }
        }
    };
}

routes! {
    fleet {
        Version => Get "/version",
        AccessTicket => Post "/access/ticket",
        AccessPermissions => Get "/access/permissions",
        UserCreate => Post "/access/users",
        TokenDelete => Delete "/access/users/{userid}/token/{tokenid}",
        TokenCreate => Post "/access/users/{userid}/token/{tokenid}",
        RoleCreate => Post "/access/roles",
        RoleUpdate => Put "/access/roles/{roleid}",
        AclUpdate => Put "/access/acl",
        ClusterResources => Get "/cluster/resources",
        ClusterStatus => Get "/cluster/status",
        ClusterNextid => Get "/cluster/nextid",
        ClusterTasks => Get "/cluster/tasks",
        HaResourceList => Get "/cluster/ha/resources",
        Nodes => Get "/nodes",
        NodeStatus => Get "/nodes/{node}/status",
        NodeCertificates => Get "/nodes/{node}/certificates/info",
        VmList => Get "/nodes/{node}/qemu",
        VmCreate => Post "/nodes/{node}/qemu",
        VmDestroy => Delete "/nodes/{node}/qemu/{vmid}",
        VmConfigGet => Get "/nodes/{node}/qemu/{vmid}/config",
        VmConfigPost => Post "/nodes/{node}/qemu/{vmid}/config",
        VmConfigPut => Put "/nodes/{node}/qemu/{vmid}/config",
        VmPending => Get "/nodes/{node}/qemu/{vmid}/pending",
        VmStatusCurrent => Get "/nodes/{node}/qemu/{vmid}/status/current",
        VmStart => Post "/nodes/{node}/qemu/{vmid}/status/start",
        VmStop => Post "/nodes/{node}/qemu/{vmid}/status/stop",
        VmShutdown => Post "/nodes/{node}/qemu/{vmid}/status/shutdown",
        VmReboot => Post "/nodes/{node}/qemu/{vmid}/status/reboot",
        VmReset => Post "/nodes/{node}/qemu/{vmid}/status/reset",
        VmSuspend => Post "/nodes/{node}/qemu/{vmid}/status/suspend",
        VmResume => Post "/nodes/{node}/qemu/{vmid}/status/resume",
        VmClone => Post "/nodes/{node}/qemu/{vmid}/clone",
        VmResize => Put "/nodes/{node}/qemu/{vmid}/resize",
        VmTemplate => Post "/nodes/{node}/qemu/{vmid}/template",
        VmMigrateCheck => Get "/nodes/{node}/qemu/{vmid}/migrate",
        VmMigrate => Post "/nodes/{node}/qemu/{vmid}/migrate",
        VmRemoteMigrate => Post "/nodes/{node}/qemu/{vmid}/remote_migrate",
        SnapshotList => Get "/nodes/{node}/qemu/{vmid}/snapshot",
        SnapshotCreate => Post "/nodes/{node}/qemu/{vmid}/snapshot",
        SnapshotDelete => Delete "/nodes/{node}/qemu/{vmid}/snapshot/{snapname}",
        SnapshotConfig => Get "/nodes/{node}/qemu/{vmid}/snapshot/{snapname}/config",
        SnapshotRollback => Post "/nodes/{node}/qemu/{vmid}/snapshot/{snapname}/rollback",
        AgentNetwork => Get "/nodes/{node}/qemu/{vmid}/agent/network-get-interfaces",
        AgentPing => Post "/nodes/{node}/qemu/{vmid}/agent/ping",
        NodeTasks => Get "/nodes/{node}/tasks",
        TaskStop => Delete "/nodes/{node}/tasks/{upid}",
        TaskStatus => Get "/nodes/{node}/tasks/{upid}/status",
        TaskLog => Get "/nodes/{node}/tasks/{upid}/log",
        StorageList => Get "/nodes/{node}/storage",
        StorageStatus => Get "/nodes/{node}/storage/{storage}/status",
        StorageContent => Get "/nodes/{node}/storage/{storage}/content",
        NetworkList => Get "/nodes/{node}/network",
    }
    testbed {
        HaResourceRead => Get "/cluster/ha/resources/{sid}",
        VmMtunnel => Post "/nodes/{node}/qemu/{vmid}/mtunnel",
    }
}

impl Route {
    /// Match a concrete path (below `/api2/json`) to a route of this method, returning the
    /// route and the path parameters (`{node}` → value). Segments are compared after
    /// percent-decoding, which the caller has done.
    pub fn match_path(method: HttpMethod, path: &str) -> Option<(Route, Vec<(String, String)>)> {
        let segs: Vec<&str> = path.trim_end_matches('/').split('/').skip(1).collect();
        'routes: for route in Route::SERVED
            .iter()
            .copied()
            .filter(|r| r.method() == method)
        {
            let tsegs: Vec<&str> = route.template().split('/').skip(1).collect();
            if tsegs.len() != segs.len() {
                continue;
            }
            let mut params = Vec::new();
            for (t, s) in tsegs.iter().zip(&segs) {
                if let Some(name) = t.strip_prefix('{').and_then(|t| t.strip_suffix('}')) {
                    if s.is_empty() {
                        continue 'routes;
                    }
                    params.push((name.to_string(), (*s).to_string()));
                } else if t != s {
                    continue 'routes;
                }
            }
            return Some((route, params));
        }
        None
    }

    /// Whether the method changes state (needs a CSRF token with ticket auth, refused for a
    /// read-only token).
    pub fn is_write(self) -> bool {
        self.method() != HttpMethod::Get
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn there_are_53_fleet_routes_2_testbed_routes_and_templates_are_unique() {
        assert_eq!(Route::ALL.len(), 53);
        assert!(Route::ALL.contains(&Route::HaResourceList));
        assert_eq!(Route::TESTBED, [Route::HaResourceRead, Route::VmMtunnel]);
        assert_eq!(Route::SERVED.len(), 55);
        let mut seen = std::collections::HashSet::new();
        for r in Route::SERVED {
            assert!(seen.insert((r.method(), r.template())), "{r:?} twice");
        }
    }

    #[test]
    fn match_path_extracts_parameters() {
        let (r, p) = Route::match_path(
            HttpMethod::Post,
            "/nodes/pve1/qemu/100/snapshot/before/rollback",
        )
        .unwrap();
        assert_eq!(r, Route::SnapshotRollback);
        assert_eq!(
            p,
            vec![
                ("node".into(), "pve1".into()),
                ("vmid".into(), "100".into()),
                ("snapname".into(), "before".into())
            ]
        );
        assert!(Route::match_path(HttpMethod::Get, "/nodes/pve1/foo").is_none());
        assert_eq!(
            Route::match_path(HttpMethod::Get, "/nodes/").unwrap().0,
            Route::Nodes
        );
    }
}
