//! Generated identifiers: MAC addresses with the Proxmox OUI `BC:24:11` (datacenter
//! `mac_prefix` default), UUIDs for `smbios1`/`vmgenid`, and the stored form of `cipassword`.
//! All draw from the cluster's seeded RNG so runs are reproducible.

use rand::Rng;
use rand::rngs::StdRng;
use sha1::{Digest, Sha1};

/// `BC:24:11:XX:XX:XX` as `PVE::Tools::random_ether_addr` prints it (upper case).
pub(super) fn random_mac(rng: &mut StdRng) -> String {
    let b: [u8; 3] = rng.random();
    format!("BC:24:11:{:02X}:{:02X}:{:02X}", b[0], b[1], b[2])
}

/// A random (version 4) UUID, lower case.
pub(super) fn random_uuid(rng: &mut StdRng) -> String {
    crate::uuid::uuid_v4(rng.random())
}

/// The crypt-style hash PVE stores for a non-Windows `cipassword` (`$5$salt$hash`); values that
/// already look hashed are kept, as `update_vm_api` does.
pub(super) fn hash_password(rng: &mut StdRng, password: &str) -> String {
    let already = ["$1$", "$5$", "$6$", "$2a$", "$2y$"]
        .iter()
        .any(|p| password.starts_with(p))
        && password.matches('$').count() >= 3;
    if already {
        return password.to_string();
    }
    let salt: [u8; 6] = rng.random();
    let salt = hex::encode(salt);
    let hash = hex::encode(Sha1::digest(format!("{salt}{password}").as_bytes()));
    format!("$5${salt}${hash}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn macs_and_uuids_are_well_formed_and_seeded() {
        let mut a = StdRng::seed_from_u64(7);
        let mut b = StdRng::seed_from_u64(7);
        let mac = random_mac(&mut a);
        assert_eq!(mac, random_mac(&mut b));
        assert!(mac.starts_with("BC:24:11:") && mac.len() == 17);
        let uuid = random_uuid(&mut a);
        assert_eq!(uuid.len(), 36);
        assert_eq!(&uuid[14..15], "4");
        assert!(hash_password(&mut a, "secret").starts_with("$5$"));
        assert_eq!(hash_password(&mut a, "$6$abc$def"), "$6$abc$def");
    }
}
